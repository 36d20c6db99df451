"""The central descheduler: upstream ``descheduler/v1alpha2`` policies, upstream's decisions.

Layout (one concern per module):
- ``model``: compact projections of the cluster objects the plugins read (``PodInfo``,
  ``NodeInfo``, ...) and ``ClusterSnapshot``, the one input of a cycle;
- ``plan``: what a cycle decides (``Plan``, ``PlannedEviction``), the one JSON shape every
  plan this product prints;
- the pure core (policy, framework, plugins, cycle) takes a snapshot and returns a plan;
- the runtime side (caches, the live and dry-run evictors, leader election, the app) feeds
  snapshots in and carries plans out.

Plugins never call the API and never count evictions: they ask the evictor handle.
"""
