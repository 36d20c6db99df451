"""The running descheduler: the command (flags and ``--config`` into the options, then the
policy), process wiring (``app``), the per-cycle runner, event-driven triggers, taint
actions (and ``emptying``, HighNodeUtilization's soft taints), the evictor, budget watch,
report trust and metrics. Feeds snapshots from ``cache`` to ``core`` and carries the plans
out."""
