"""One self-contained HTML report (inline CSS, JS and SVG; nothing fetched) over one or more run folders, of
any kind: each kind's section is its own (``RunKind.view`` and ``html``, in the kind's package); this package
holds the pieces they share (tables, charts, health, transcripts, breakdowns), the page around them and
`emoharbor judges`'s table."""
