"""Implicit disruption budgets: no more of a workload unavailable at once than its own rollout
would take down.

What users of descheduling fear most is an owner without a PodDisruptionBudget losing most of
its pods at once, and balancing on real usage invites it: a node's biggest users are often the
pods of one Deployment. A workload without a PDB still says how much unavailability it
tolerates: its controller's rolling update. So where no PDB selects a pod, its workload's
rollout is the budget, counted as a PDB with that ``maxUnavailable`` would count it:
``disruptionsAllowed = maxUnavailable - (desired - healthy)``, healthy being the workload's
Running, Ready pods that are not being deleted. A PDB, when there is one, is the user's word
and replaces it.

How many at once, by each controller's own rules:

- Deployment, ``RollingUpdate``: ``maxUnavailable`` (default 25 %) of ``spec.replicas``
  rounded down, resolved with ``maxSurge`` (default 25 %, rounded up) as the Deployment
  controller resolves them (``ResolveFenceposts``: when both come to 0, unavailable is 1),
  at most the replicas;
- Deployment, ``Recreate``: its rollout takes every pod down at once, but that is a release
  its owner chose; a rebalancing is not, so the default rolling update's share applies;
- a ReplicaSet without a Deployment, or a ReplicationController: no rollout of its own, so
  the Deployment default's share too (25 % of its replicas, rounded down);
- StatefulSet: ``spec.updateStrategy.rollingUpdate.maxUnavailable`` (default 1; a percentage
  rounded down and at least 1, as the StatefulSet controller resolves it); 1 with
  ``OnDelete``.

Then at least 1, always: a rollout whose ``maxUnavailable`` resolves to 0 surges instead (it
starts a new pod before it stops an old one). An eviction cannot surge, so its nearest
equivalent is one pod at a time, each going once the previous one's replacement is Ready.
Without the floor a Deployment of three replicas (25 % is 0) could never be descheduled, and
the budget would change which pods go, where it is meant to change only when.

A Deployment's pods count across all of its ReplicaSets (a rollout in progress included).
DaemonSet pods are never evicted (the DefaultEvictor refuses them); pods of other controllers
(Jobs, custom controllers) or of none have no implicit budget.

A controller missing from a snapshot that holds its kind in full (the live caches) does not
exist: nothing will replace its pods, so holding their evictions for replacements would only
hold them until the cycle ends; they have no implicit budget. A snapshot file dumped without
the kind (``kubectl get`` without ``deployments,replicasets,statefulsets,
replicationcontrollers``) may simply not show it: then the pods of its controller the file
holds stand in for its replicas, with the kind's default share, and the budget says it fell
back.

Pure: a snapshot in, budgets out. One ``Rollouts`` per cycle: the one pass over the pods it
needs (pods per controller, and how many are Ready) is made the first time it is asked.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.descheduler.model.cluster import ClusterSnapshot, OwnerRef, PodInfo, WorkloadInfo
from agent.descheduler.plan.shape import ImplicitBudget, implicit_key
from agent.kubesemantics.wellknown import (
    DEPLOYMENT_KIND,
    FINISHED_PHASES,
    REPLICA_SET_KIND,
    REPLICATION_CONTROLLER_KIND,
    RUNNING,
    STATEFUL_SET_KIND,
)

BUDGETED_CONTROLLERS = frozenset({REPLICA_SET_KIND, STATEFUL_SET_KIND, REPLICATION_CONTROLLER_KIND})
"""The pod controllers whose pods have an implicit budget."""
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
DEPLOYMENT_DEFAULT = "25%"
"""A Deployment's default ``maxUnavailable`` and ``maxSurge`` (apps/v1 defaulting)."""
STATEFUL_SET_DEFAULT = 1
"""A StatefulSet rolling update's default ``maxUnavailable``."""


def scaled(value: int | str, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: a count as it is, a percentage (``"25%"``,
    validated when projected) of ``total``, rounded up or down. Integer arithmetic: Go's
    ``float64(v) * float64(total) / 100`` is exact for any replica count."""
    if isinstance(value, int):
        return value
    product = int(value.removesuffix("%")) * total
    return -(-product // 100) if round_up else product // 100


def deployment_max_unavailable(
    replicas: int,
    strategy: str,
    max_surge: int | str | None,
    max_unavailable: int | str | None,
) -> int:
    """``deploymentutil.MaxUnavailable``: 0 unless a rolling update of a Deployment with
    replicas; both fenceposts resolved together (``ResolveFenceposts``); at most the
    replicas."""
    if strategy not in ("", ROLLING_UPDATE) or replicas <= 0:
        return 0
    surge = scaled(DEPLOYMENT_DEFAULT if max_surge is None else max_surge, replicas, round_up=True)
    unavailable = scaled(
        DEPLOYMENT_DEFAULT if max_unavailable is None else max_unavailable,
        replicas,
        round_up=False,
    )
    if surge == 0 and unavailable == 0:
        unavailable = 1  # the controller's own fencepost: surge might not work (quota)
    return min(unavailable, replicas)


def stateful_set_max_unavailable(replicas: int, max_unavailable: int | str | None) -> int:
    """The StatefulSet controller's ``getStatefulSetMaxUnavailable``: default 1, a percentage
    rounded down, at least 1."""
    value = STATEFUL_SET_DEFAULT if max_unavailable is None else max_unavailable
    return max(1, scaled(value, replicas, round_up=False))


def default_share(replicas: int) -> int:
    """What a Deployment with the default rolling update would take down at once."""
    return deployment_max_unavailable(replicas, ROLLING_UPDATE, None, None)


def implicit_max_unavailable(workload: WorkloadInfo) -> int:
    """How many of the workload's pods its implicit budget lets be unavailable at once: its
    rollout's share (see the module docstring), and at least 1."""
    if workload.kind == STATEFUL_SET_KIND:
        if workload.strategy == ON_DELETE:
            return 1
        return stateful_set_max_unavailable(workload.replicas, workload.max_unavailable)
    if workload.kind == DEPLOYMENT_KIND and workload.strategy in ("", ROLLING_UPDATE):
        share = deployment_max_unavailable(
            workload.replicas, workload.strategy, workload.max_surge, workload.max_unavailable
        )
    else:  # Recreate, or a ReplicaSet without a Deployment
        share = default_share(workload.replicas)
    return max(1, share)


def _controller(pod: PodInfo) -> OwnerRef | None:
    for owner in pod.owners:  # ``pod.controller`` without a generator per pod
        if owner.controller:
            return owner
    return None


class _Census:
    """Per controller UID: its pods that are not finished nor being deleted (``seen``), and
    of them the Running, Ready ones (``healthy``, as the disruption controller counts)."""

    __slots__ = ("healthy", "seen")

    def __init__(self) -> None:
        self.seen = 0
        self.healthy = 0


_NOT_BUDGETED = ImplicitBudget(key="", desired=0, max_unavailable=0, members=frozenset())
"""Remembered for a controller whose pods have no implicit budget."""


class Rollouts:
    """The implicit budgets of one snapshot's workloads, found per pod."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self._snapshot = snapshot
        self._by_controller: dict[str, ImplicitBudget] = {}
        self._census: dict[str, _Census] | None = None
        self._replica_sets: dict[str, list[str]] | None = None
        """Deployment UID -> the UIDs of its ReplicaSets."""

    def of(self, pod: PodInfo) -> ImplicitBudget | None:
        """The implicit budget of the pod's workload; ``None`` when it has none (no
        controller, or one of another kind)."""
        owner = _controller(pod)
        if owner is None or owner.kind not in BUDGETED_CONTROLLERS:
            return None
        budget = self._by_controller.get(owner.uid)
        if budget is None:
            budget = self._by_controller[owner.uid] = self._budget(owner, pod.namespace)
        return None if budget is _NOT_BUDGETED else budget

    def healthy(self, budget: ImplicitBudget) -> int:
        """The budget's Running, Ready pods in the snapshot, not being deleted."""
        census = self._counted()
        return sum(census[uid].healthy for uid in budget.members if uid in census)

    def allowed(self, budget: ImplicitBudget) -> int:
        """Disruptions the budget allows on the snapshot."""
        return budget.allows(self.healthy(budget))

    def _budget(self, owner: OwnerRef, namespace: str) -> ImplicitBudget:
        workloads = self._snapshot.workloads
        complete = self._snapshot.workload_kinds
        workload = workloads.get(owner.uid)
        if workload is None or workload.kind != owner.kind:
            if owner.kind in complete:
                return _NOT_BUDGETED  # no such controller: nothing replaces its pods
            return self._fallback(owner, namespace)
        controller = workload.controller
        if workload.kind == REPLICA_SET_KIND and controller is not None:
            if controller.kind != DEPLOYMENT_KIND:
                return _NOT_BUDGETED  # another controller's (an Argo Rollout's) rollout
            deployment = workloads.get(controller.uid)
            if deployment is None or deployment.kind != DEPLOYMENT_KIND:
                # The ReplicaSet alone: orphaned (its Deployment is gone), or its Deployment
                # was not dumped (said so).
                return ImplicitBudget(
                    key=implicit_key(REPLICA_SET_KIND, namespace, workload.name),
                    desired=workload.replicas,
                    max_unavailable=max(1, default_share(workload.replicas)),
                    members=frozenset({workload.uid}),
                    fallback=DEPLOYMENT_KIND not in complete,
                )
            members = frozenset(self._replica_sets_of().get(deployment.uid, (workload.uid,)))
            return ImplicitBudget(
                key=implicit_key(DEPLOYMENT_KIND, namespace, deployment.name),
                desired=deployment.replicas,
                max_unavailable=implicit_max_unavailable(deployment),
                members=members,
            )
        return ImplicitBudget(
            key=implicit_key(workload.kind, namespace, workload.name),
            desired=workload.replicas,
            max_unavailable=implicit_max_unavailable(workload),
            members=frozenset({workload.uid}),
        )

    def _fallback(self, owner: OwnerRef, namespace: str) -> ImplicitBudget:
        """The controller is not in the snapshot: its pods seen stand in for its replicas."""
        census = self._counted().get(owner.uid)
        seen = census.seen if census is not None else 0
        share = 1 if owner.kind == STATEFUL_SET_KIND else max(1, default_share(seen))
        return ImplicitBudget(
            key=implicit_key(owner.kind, namespace, owner.name),
            desired=seen,
            max_unavailable=share,
            members=frozenset({owner.uid}),
            fallback=True,
        )

    def _replica_sets_of(self) -> Mapping[str, list[str]]:
        if self._replica_sets is None:
            index: dict[str, list[str]] = {}
            for workload in self._snapshot.workloads.values():
                controller = workload.controller
                if workload.kind == REPLICA_SET_KIND and controller is not None:
                    index.setdefault(controller.uid, []).append(workload.uid)
            self._replica_sets = index
        return self._replica_sets

    def _counted(self) -> Mapping[str, _Census]:
        """One pass over the snapshot's pods, the first time a count is needed."""
        if self._census is None:
            census: dict[str, _Census] = {}
            for pods in self._snapshot.pods_by_node.values():
                for pod in pods:
                    if pod.deleting or pod.phase in FINISHED_PHASES:
                        continue
                    owner = _controller(pod)
                    if owner is None or owner.kind not in BUDGETED_CONTROLLERS:
                        continue
                    counts = census.get(owner.uid)
                    if counts is None:
                        counts = census[owner.uid] = _Census()
                    counts.seen += 1
                    if pod.ready and pod.phase == RUNNING:
                        counts.healthy += 1
            self._census = census
        return self._census
