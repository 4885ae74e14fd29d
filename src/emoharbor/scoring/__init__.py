"""The reply-scoring core: what a suite that puts scorers (the simulated user's reaction, judge cards) on
replies shares. ``items``: a case (a context and the reply that followed), one scorer on one reply as a unit
of work; ``options``: the scorers a run is given and their checks; ``stage``: the scorers' models made and the
units done in a run store; ``values``: the scorers' values read back from the records. A suite (``sensitivity``,
``seekers``) keeps only its own data reading and analysis."""
