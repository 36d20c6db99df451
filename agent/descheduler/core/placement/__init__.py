"""Where the evicted pods' replacements would land: the default kube-scheduler, offline.

- ``replacements``: the plan's evictions in the order and windows the live loop sends them,
  each replacement placed (``place``), and the plan with its destinations;
- ``simulation``: the cluster as the plan leaves it, the scheduler's filters and its pick;
- ``plannedcluster``: what the scorers read of the simulation;
- ``fullscore`` (every feasible node scored: the reference) and ``fastscore`` (the common
  case, from per-size rankings of the nodes), each handing back a ``scored.Scored``;
- ``nodes`` (one node's requests, its filters, the rankings), ``scoring`` (each score
  plugin's arithmetic), ``profile`` (the scheduler profile predicted for).
"""
