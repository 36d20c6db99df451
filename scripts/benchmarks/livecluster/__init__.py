"""A real control plane on loopback for the live-loop benchmark (``live.py``).

A descheduler is judged by what the cluster looks like after it ran: the real kube-scheduler
places replacements, the real ReplicaSet controller makes them, the real disruption
controller moves PodDisruptionBudget status and the real API server admits or refuses each
eviction. A frozen snapshot shows none of that, so this package brings all of it up on
loopback (``controlplane``), plays the kubelets of fake nodes (``nodes``), watches every pod
(``tracker``), lays out a scenario (``workload``, ``scenario``) and turns what it saw into
figures (``measures``, pure functions a unit test pins).

The binaries are not part of the project and CI never has them: ``binaries`` finds them and
says what is missing, and the benchmark skips with that reason.
"""
