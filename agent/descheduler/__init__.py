"""The central descheduler: upstream ``descheduler/v1alpha2`` policies, upstream's decisions.

Layout (one concern per module):
- ``model``: compact projections of the cluster objects the plugins read (``PodInfo``,
  ``NodeInfo``, ...) and ``ClusterSnapshot``, the one input of a cycle;
- ``plan``: what a cycle decides (``Plan``, ``PlannedEviction``), the one JSON shape every
  plan this product prints;
- the pure core takes a snapshot and returns a plan:
  - ``projection``: API JSON -> the model, and ``snapshot_from_list`` for a List;
  - ``policy``: ``load_policy`` reads a ``descheduler/v1alpha2`` policy, every error at once;
  - ``framework``: plugin interfaces (``types``), the built-in plugins (``registry``), profiles;
  - ``plugins``: DefaultEvictor, LowNodeUtilization/HighNodeUtilization, RemoveDuplicates,
    RemovePodsViolating{NodeTaints,NodeAffinity,InterPodAntiAffinity,TopologySpreadConstraint},
    RemovePodsHavingTooManyRestarts, PodLifeTime, RemoveFailedPods (``podstatus`` holds the
    part of a pod's status these three read), CriticalAddonRescue, NodeShutdownRecovery;
  - matching rules the plugins share: ``nodefit`` (upstream's ``NodeFit``), ``antiaffinity``,
    ``topology`` (spread constraints and domains), ``podorder`` (low to high priority);
  - ``evictions``: the limits and the recording ``Planner`` (PDBs as the API server applies
    them); ``budgets`` says which PDBs select a pod;
  - ``cycle``: ``run_cycle(policy, snapshot, options) -> Plan``;
  - ``placement``: where each evicted pod would land (a default kube-scheduler's pick);
- the runtime side (caches, the live and dry-run evictors, leader election, the app) feeds
  snapshots in and carries plans out; ``taintactions`` applies a plan's taints of ours
  (CriticalAddonRescue, NodeShutdownRecovery) before its evictions, and ``triggers`` decides
  when an event-driven cycle starts (pure, fed by the caches' events);
- the offline plan (``offline``: ``descheduler plan``) reads its snapshot from a file
  (``snapshotfile``, through the caches' own decoders and projections) instead.

Plugins never call the API and never count evictions: they ask the evictor handle.
"""
