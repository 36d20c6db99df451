"""The pure planner: a policy and a snapshot in, a plan out (``cycle.run_cycle``).

``policy`` reads upstream's ``descheduler/v1alpha2``; ``framework`` is the plugin interface
and registry; ``plugins`` are upstream's and ours (independent of each other); ``rules`` are
the matching rules they share (node fit, anti-affinity, spread, pod order, budgets);
``evictions`` counts limits and budgets as the API server would; ``placement`` predicts where
each evicted pod lands. Plugins never call the API and never count evictions themselves.
"""
