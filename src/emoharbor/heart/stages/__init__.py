"""HEART's model stages, each resumable in the run store: histories loaded from their sources, candidate
replies generated, pairs judged in both orders, replies labelled with support strategies; and the check of
the strategy labeller against ESConv's annotators."""
