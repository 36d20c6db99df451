"""What a cycle reads: compact projections of the cluster objects (``cluster``), the part of a
pod's status the pod-state plugins read (``podstatus``) and the keys both sides agree on
(``keys``). Plain data, no I/O: every other layer imports it."""
