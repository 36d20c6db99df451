"""The audit: what each container's ``memory.swap.max`` should be, next to what it is.

Pure: pods (API dicts) and a kubepods scan go in, a report comes out. Cgroups are matched
to containers by (pod UID, container ID) as plain strings; a cgroup no pod claims is listed
as unmapped and never touched. The kernel stores the limit in pages and reads it back
rounded down, so a value is in sync when it equals the expected bytes or their page-aligned
floor.

On a cgroup v1 kubepods tree there is no ``memory.swap.max`` and kubelet sets no swap limit
(LimitedSwap needs cgroup v2), so nothing is compared there: each container is listed with
the values v1 has (working set, swap in use) and the state ``not-compared``.

Expected limits use the swap capacity kubelet computes with: the one it read at start-up and
reports in ``status.nodeInfo.swap.capacity``, or ``SwapTotal`` where the Node does not report
it. While the two disagree (swap was resized after kubelet started) the plan to enforce is
empty: kubelet would compute new containers' limits from one size and we would be judging by
the other, so we only report.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agent.kubesemantics.pods import is_finished
from agent.kubesemantics.qos import QOSClass
from agent.node.containercgroups import CgroupReading, KubepodsScan, SwapMax
from agent.swap.limits import SwapLimit, SwapNode, container_swap_limit
from agent.swap.pods import ContainerKind, PodView, pod_view

_KIND_ORDER = {ContainerKind.INIT: 0, ContainerKind.REGULAR: 1, ContainerKind.EPHEMERAL: 2}


class DriftState(StrEnum):
    OK = "ok"
    DRIFT = "drift"
    UNKNOWN = "unknown"
    """The cgroup exists but has no readable ``memory.swap.max``."""
    NO_CGROUP = "no-cgroup"
    """Not running (yet, or any more), so there is nothing to compare."""
    NOT_COMPARED = "not-compared"
    """A cgroup v1 container: kubelet sets no swap limit there, so none is compared."""


@dataclass(frozen=True)
class ContainerAudit:
    namespace: str
    pod: str
    pod_uid: str
    container: str
    kind: ContainerKind
    qos: QOSClass
    memory_request: int
    memory_limit: int
    expected: SwapLimit
    actual: SwapMax
    usage: int | None
    cgroup: str | None
    state: DriftState
    memory_working_set: int | None = None
    """cgroup v1 only (see ``CgroupReading``)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "pod": self.pod,
            "pod_uid": self.pod_uid,
            "container": self.container,
            "kind": self.kind.value,
            "qos": self.qos.value,
            "memory_request_bytes": self.memory_request,
            "memory_limit_bytes": self.memory_limit,
            "expected_bytes": self.expected.bytes,
            "expected_reason": self.expected.reason,
            "expected_error": self.expected.error,
            "actual": self.actual,
            "usage_bytes": self.usage,
            "memory_working_set_bytes": self.memory_working_set,
            "cgroup": self.cgroup,
            "state": self.state.value,
        }


@dataclass(frozen=True)
class UnmappedCgroup:
    """A container cgroup in the tree that no pod on this node claims (sandboxes, strays)."""

    path: str
    pod_uid: str
    container_id: str
    swap_max: SwapMax
    swap_current: int | None
    memory_working_set: int | None = None
    """cgroup v1 only (see ``CgroupReading``)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "cgroup": self.path,
            "pod_uid": self.pod_uid,
            "container_id": self.container_id,
            "actual": self.swap_max,
            "usage_bytes": self.swap_current,
            "memory_working_set_bytes": self.memory_working_set,
        }


class CapacitySource(StrEnum):
    KUBELET = "kubelet"
    """``node.status.nodeInfo.swap.capacity``."""
    MEMINFO = "meminfo"
    """``SwapTotal`` in ``/proc/meminfo``."""


@dataclass(frozen=True)
class NodeSummary:
    node: SwapNode
    """``node.swap_capacity_bytes`` is the capacity the expected limits are computed from."""
    swap_on: bool
    swap_used_bytes: int
    swap_total_bytes: int
    """``SwapTotal`` from ``/proc/meminfo``: the node's swap now."""
    cgroup_mode: str
    """``CgroupMode`` of ``/sys/fs/cgroup``."""
    noswap_supported: bool
    noswap_reason: str
    page_size: int
    driver: str | None
    kubepods_root: str | None
    kubepods_problem: str | None = None
    kubelet_swap_capacity_bytes: int | None = None
    """What kubelet reports in ``node.status.nodeInfo.swap.capacity``, when known."""
    kubepods_version: int | None = None
    """The cgroup version of the kubepods tree found (``None``: none found)."""
    swap_controller_detail: str = ""
    """``CgroupFacts.swap_controller_line``: which controller, usable for LimitedSwap or not."""

    @property
    def cgroup_v1(self) -> bool:
        """A v1 or hybrid node, or a kubepods tree found in v1 hierarchies."""
        return self.cgroup_mode in ("v1", "hybrid") or self.kubepods_version == 1

    @property
    def limits_compared(self) -> bool:
        """Whether containers' swap limits are compared: not on a cgroup v1 kubepods tree,
        which has no ``memory.swap.max``."""
        return self.kubepods_version != 1

    @property
    def capacity_source(self) -> CapacitySource:
        if self.kubelet_swap_capacity_bytes is None:
            return CapacitySource.MEMINFO
        return CapacitySource.KUBELET

    @property
    def capacity_mismatch(self) -> bool:
        """kubelet's start-up swap capacity is not the node's swap any more."""
        kubelet = self.kubelet_swap_capacity_bytes
        return kubelet is not None and kubelet != self.swap_total_bytes

    @property
    def enforce_refusal(self) -> str | None:
        """Why ``memorySwap.enforce`` must not write on this node now, or ``None``."""
        node = self.node
        if not (node.cgroup_v2 and node.swap_controller):
            return "swap limit enforcement needs cgroup v2 with the swap controller"
        if self.capacity_mismatch:
            return (
                f"kubelet's swap capacity ({self.kubelet_swap_capacity_bytes} bytes) differs "
                f"from SwapTotal ({self.swap_total_bytes} bytes) until kubelet restarts"
            )
        return None

    def as_json(self) -> dict[str, Any]:
        node = self.node
        return {
            "swap_behavior": node.behavior,
            "swap_on": self.swap_on,
            "swap_capacity_bytes": node.swap_capacity_bytes,
            "swap_capacity_source": self.capacity_source.value,
            "swap_total_bytes": self.swap_total_bytes,
            "swap_capacity_mismatch": self.capacity_mismatch,
            "enforce_refusal": self.enforce_refusal,
            "swap_used_bytes": self.swap_used_bytes,
            "reserved_swap_bytes": node.reserved_swap_bytes,
            "pods_swap_available_bytes": node.pods_swap_available,
            "memory_total_bytes": node.memory_total_bytes,
            "cgroup_mode": self.cgroup_mode,
            "swap_controller": node.swap_controller,
            "swap_controller_detail": self.swap_controller_detail,
            "tmpfs_noswap_supported": self.noswap_supported,
            "tmpfs_noswap_reason": self.noswap_reason,
            "page_size_bytes": self.page_size,
            "cgroup_driver": self.driver,
            "kubepods_cgroup": self.kubepods_root,
            "kubepods_cgroup_version": self.kubepods_version,
            "kubepods_problem": self.kubepods_problem,
            "swap_limits_compared": self.limits_compared,
            "kubelet_swap_capacity_bytes": self.kubelet_swap_capacity_bytes,
        }


@dataclass(frozen=True)
class AuditReport:
    summary: NodeSummary
    containers: tuple[ContainerAudit, ...]
    unmapped: tuple[UnmappedCgroup, ...]

    @property
    def drifted(self) -> tuple[ContainerAudit, ...]:
        return tuple(row for row in self.containers if row.state is DriftState.DRIFT)

    def as_json(self) -> dict[str, Any]:
        return {
            "containers": [row.as_json() for row in self.containers],
            "unmapped_cgroups": [cgroup.as_json() for cgroup in self.unmapped],
            "drifted_containers": len(self.drifted),
            "node": self.summary.as_json(),
        }


def in_sync(actual: SwapMax, expected: int, page_size: int) -> bool:
    """The kernel keeps whole pages: writing N reads back as N rounded down to a page."""
    if not isinstance(actual, int):
        return False
    return actual in (expected, expected - expected % page_size)


def _state(reading: CgroupReading | None, expected: int, summary: NodeSummary) -> DriftState:
    if reading is None:
        return DriftState.NO_CGROUP
    if not summary.limits_compared:
        return DriftState.NOT_COMPARED
    if reading.swap_max is None:
        return DriftState.UNKNOWN
    in_step = in_sync(reading.swap_max, expected, summary.page_size)
    return DriftState.OK if in_step else DriftState.DRIFT


def audit_containers(
    pods: Iterable[Mapping[str, Any]],
    readings: Iterable[CgroupReading],
    summary: NodeSummary,
    views: Sequence[PodView] | None = None,
) -> tuple[tuple[ContainerAudit, ...], tuple[UnmappedCgroup, ...]]:
    """``views``, when given, are ``pod_view`` of each pod, in order (the controller keeps
    them across audits: building them was most of a full audit's CPU)."""
    by_key = {(reading.pod_uid, reading.container_id): reading for reading in readings}
    claimed: set[tuple[str, str]] = set()
    rows = []
    listed = list(pods)
    known: Sequence[PodView | None] = [None] * len(listed) if views is None else views
    for pod, seen in zip(listed, known, strict=True):
        if is_finished(pod):
            continue
        view = seen or pod_view(pod)
        for container in view.containers:
            reading = None
            if container.container_id is not None:
                for uid in view.cgroup_uids:
                    key = (uid, container.container_id)
                    if key in by_key:
                        reading = by_key[key]
                        claimed.add(key)
                        break
            expected = container_swap_limit(summary.node, view, container)
            rows.append(
                ContainerAudit(
                    namespace=view.namespace,
                    pod=view.name,
                    pod_uid=view.uid,
                    container=container.name,
                    kind=container.kind,
                    qos=view.qos,
                    memory_request=container.memory_request,
                    memory_limit=container.memory_limit,
                    expected=expected,
                    actual=reading.swap_max if reading else None,
                    usage=reading.swap_current if reading else None,
                    cgroup=reading.path if reading else None,
                    state=_state(reading, expected.bytes, summary),
                    memory_working_set=reading.memory_working_set if reading else None,
                )
            )
    rows.sort(key=row_order)
    unmapped = tuple(
        UnmappedCgroup(
            r.path, r.pod_uid, r.container_id, r.swap_max, r.swap_current, r.memory_working_set
        )
        for key, r in sorted(by_key.items())
        if key not in claimed
    )
    return tuple(rows), unmapped


def row_order(row: ContainerAudit) -> tuple[str, str, str, int, str]:
    """Rows by pod name, then UID (a pod re-created under its old name sits next to the old
    one in a fixed order), then init, regular and ephemeral containers."""
    return (row.namespace, row.pod, row.pod_uid, _KIND_ORDER[row.kind], row.container)


def unmapped_order(cgroup: UnmappedCgroup) -> tuple[str, str]:
    return (cgroup.pod_uid, cgroup.container_id)


def build_report(
    summary: NodeSummary,
    pods: Iterable[Mapping[str, Any]],
    scan: KubepodsScan,
    views: Sequence[PodView] | None = None,
) -> AuditReport:
    containers, unmapped = audit_containers(pods, scan.containers, summary, views)
    return AuditReport(summary=summary, containers=containers, unmapped=unmapped)


@dataclass(frozen=True)
class SwapWrite:
    """One enforcement step: put ``value`` into the container cgroup at ``path``."""

    path: str
    value: int
    namespace: str
    pod: str
    container: str
    previous: SwapMax


def enforce_plan(
    report: AuditReport, pod_uids: Container[str] | None = None
) -> tuple[SwapWrite, ...]:
    """Writes for drifted containers of pods on this node (with ``pod_uids``, of those pods
    only: the ones an incremental audit re-read), and nothing else; none at all while the
    node refuses enforcement (see ``NodeSummary.enforce_refusal``)."""
    if report.summary.enforce_refusal is not None:
        return ()
    return tuple(
        SwapWrite(row.cgroup, row.expected.bytes, row.namespace, row.pod, row.container, row.actual)
        for row in report.drifted
        if row.cgroup is not None and (pod_uids is None or row.pod_uid in pod_uids)
    )
