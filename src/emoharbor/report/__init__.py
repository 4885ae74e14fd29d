"""One self-contained HTML report (inline CSS, JS and SVG; nothing fetched) over one or more run folders:
EmoHarbor runs, validate runs, and a short section for HEART runs."""
