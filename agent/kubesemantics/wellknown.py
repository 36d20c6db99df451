"""Kubernetes' own names, each written once: pod phases, condition types, well-known labels,
taint keys and effects, the owner kinds the rules read, the system namespace and priority.

Why one module: the agent and the descheduler read the same objects, and a name spelled in
two places drifts (a phase set with one phase missing still type-checks). Every rule reads the
name from here; what a name means for a rule is that rule's module's (``tolerations``,
``qos``, ``pods``). The descheduler's own reading keys (its annotations, ``PodInfo.extra``) are
``agent.descheduler.model.keys``; the keys we write on Nodes are ``nodekeys``.
"""

from __future__ import annotations

# -- pod phases (``core/v1.PodPhase``) -----------------------------------------------------

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
UNKNOWN = "Unknown"
POD_PHASES = (RUNNING, PENDING, SUCCEEDED, FAILED, UNKNOWN)
FINISHED_PHASES = frozenset({SUCCEEDED, FAILED})
"""The pod ran to an end: nothing in it runs any more, no scheduler or kubelet counts it."""

# -- condition types and reasons -----------------------------------------------------------

READY = "Ready"
"""A pod's and a node's condition."""
POD_SCHEDULED = "PodScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
"""Set on a pod about to be deleted by a disruption (kubelet's shutdown, an eviction)."""
UNSCHEDULABLE = "Unschedulable"
"""``PodScheduled``'s reason when the scheduler found no node."""

# -- well-known labels ---------------------------------------------------------------------

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"

# -- taint effects and well-known taint keys -----------------------------------------------

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
"""A cordoned node's (the scheduler's NodeUnschedulable filter reads ``spec.unschedulable``
as this taint with NoSchedule)."""
DISK_PRESSURE_TAINT = "node.kubernetes.io/disk-pressure"
MEMORY_PRESSURE_TAINT = "node.kubernetes.io/memory-pressure"
PID_PRESSURE_TAINT = "node.kubernetes.io/pid-pressure"
NETWORK_UNAVAILABLE_TAINT = "node.kubernetes.io/network-unavailable"
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"
"""The non-graceful node shutdown's: pods on the node are deleted and their volumes detached."""
UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized"
"""Until the cloud controller manager initializes the node."""
CRITICAL_ADDONS_ONLY_TAINT = "CriticalAddonsOnly"
"""Tolerated by critical add-ons; the retired rescheduler tainted a node with it."""

# -- topology spread constraints -----------------------------------------------------------

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
WHEN_UNSATISFIABLE = frozenset({DO_NOT_SCHEDULE, SCHEDULE_ANYWAY})
HONOR = "Honor"
IGNORE = "Ignore"
INCLUSION_POLICIES = frozenset({HONOR, IGNORE})
"""``nodeAffinityPolicy`` and ``nodeTaintsPolicy``."""

# -- owner kinds ---------------------------------------------------------------------------

DAEMON_SET_KIND = "DaemonSet"
DEPLOYMENT_KIND = "Deployment"
REPLICA_SET_KIND = "ReplicaSet"
STATEFUL_SET_KIND = "StatefulSet"
REPLICATION_CONTROLLER_KIND = "ReplicationController"

# -- the system namespace and priority, the service account mount --------------------------

SYSTEM_NAMESPACE = "kube-system"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where kubelet mounts a pod's service account token (``token``) and the cluster's CA
(``ca.crt``)."""
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
"""``scheduling.SystemCriticalPriority``: a pod at or above it is critical (kubelet never
evicts it first; the priority classes ``system-cluster-critical`` and ``system-node-critical``
are at and above it)."""
