"""HEART's analysis of a run's stored judgements: the two orders of a pair combined into verdicts,
Bradley-Terry ratings, win rates, judge-human agreement, judge biases, strategy profiles, and their
rendering as Markdown, CSV and JSON."""
