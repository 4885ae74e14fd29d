"""HEART: human and model replies to the same dialogue histories, compared pairwise by a judge ensemble
and by human raters; Bradley-Terry ratings, judge-human agreement, judge biases and strategy profiles."""
