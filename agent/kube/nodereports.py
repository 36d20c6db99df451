"""The descheduler's view of every node's NodeReport: a watch-fed cache of compact projections.

Why a cache: the descheduler asks about many nodes and pods per cycle, and the reports change
about 83 times a second in a 5,000-node cluster; one list+watch (``Reflector``: initial list,
bookmarks, relist on 410 Gone) keeps it current with no request per question. Each object is
projected on the watch thread into a frozen ``NodeUsageReport`` (plain fields, a few hundred
bytes per pod less than the JSON), so the raw documents are never kept.

API (everything on the event loop thread; ``now`` is wall-clock Unix seconds)::

    cache = NodeReportCache(api, now=time.time)   # run ``cache.reflector`` as a watch task
    cache.node("node-a")        -> NodeUsageReport | None   # None: missing or stale
    cache.pod(uid)              -> PodUsage | None          # from a fresh report only
    cache.shutting_down("node-a"), cache.gated("node-a"), cache.stopped("node-a") -> bool
    cache.stale("node-a")       -> bool   # no report, or older than 3 heartbeats
    cache.reports()             -> list[NodeUsageReport]     # the fresh ones

``NodeUsageReport``: ``node``, ``observed_time`` (Unix s), ``heartbeat_seconds``,
``cpu_cores``/``memory_bytes``/``swap_bytes`` (EWMA-smoothed use), ``cpu_capacity``
(cores), ``memory_capacity``/``swap_capacity`` (bytes), ``cpu_allocatable``/
``memory_allocatable`` (as the Node says; ``None`` if unknown), ``gate_held``,
``waiting_for``, ``shutdown`` (``none|inProgress|completed``), ``shutdown_start``,
``budget_end``, ``agent_stopped``, ``boot_id`` and ``pods`` (``PodUsage``: ``namespace``, ``name``,
``uid``, ``cpu_cores``, ``memory_bytes``, ``swap_bytes``). A report older than
``STALE_HEARTBEATS`` heartbeats counts as missing: its agent (or node) is gone or cut off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.kube.api import JsonObject, KubeApi
from agent.kube.reflector import Reflector
from agent.kube.resources import NODE_REPORTS
from agent.kube.timestamps import parse_rfc3339

STALE_HEARTBEATS = 3
_DEFAULT_HEARTBEAT = 60.0
_PROJECTION = "projection"


@dataclass(frozen=True)
class PodUsage:
    namespace: str
    name: str
    uid: str
    cpu_cores: float
    memory_bytes: int
    swap_bytes: int


@dataclass(frozen=True)
class NodeUsageReport:
    node: str
    observed_time: float | None
    heartbeat_seconds: float
    cpu_cores: float
    memory_bytes: int
    swap_bytes: int
    cpu_capacity: float
    memory_capacity: int
    swap_capacity: int
    cpu_allocatable: float | None
    memory_allocatable: int | None
    gate_held: bool
    waiting_for: tuple[str, ...]
    shutdown: str
    shutdown_start: float | None
    budget_end: float | None
    agent_stopped: bool
    pods: tuple[PodUsage, ...]
    boot_id: str = ""
    """``status.bootID``: the boot of the node the agent wrote this in."""

    def stale(self, now: float) -> bool:
        """Older than ``STALE_HEARTBEATS`` heartbeats (or never observed)."""
        if self.observed_time is None:
            return True
        return now - self.observed_time > STALE_HEARTBEATS * self.heartbeat_seconds


def _number(value: Any, default: float = 0.0) -> float:
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
    )


def _time(value: Any) -> float | None:
    try:
        return parse_rfc3339(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _section(status: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = status.get(key)
    return value if isinstance(value, Mapping) else {}


def project(obj: Mapping[str, Any]) -> NodeUsageReport:
    """A NodeReport object as the plain, frozen view (tolerant of missing fields)."""
    metadata = _section(obj, "metadata")
    status = _section(obj, "status")
    usage, capacity = _section(status, "usage"), _section(status, "capacity")
    allocatable = _section(status, "allocatable")
    readiness, shutdown = _section(status, "readiness"), _section(status, "shutdown")
    pods = tuple(
        PodUsage(
            namespace=str(pod.get("namespace") or ""),
            name=str(pod.get("name") or ""),
            uid=str(pod.get("uid") or ""),
            cpu_cores=_number(pod.get("cpu")),
            memory_bytes=int(_number(pod.get("memory"))),
            swap_bytes=int(_number(pod.get("swap"))),
        )
        for pod in status.get("pods") or ()
        if isinstance(pod, Mapping) and pod.get("uid")
    )
    heartbeat = _number(status.get("heartbeatSeconds"), _DEFAULT_HEARTBEAT)
    return NodeUsageReport(
        node=str(metadata.get("name") or ""),
        observed_time=_time(status.get("observedTime")),
        heartbeat_seconds=heartbeat if heartbeat > 0 else _DEFAULT_HEARTBEAT,
        cpu_cores=_number(usage.get("cpu")),
        memory_bytes=int(_number(usage.get("memory"))),
        swap_bytes=int(_number(usage.get("swap"))),
        cpu_capacity=_number(capacity.get("cpu")),
        memory_capacity=int(_number(capacity.get("memory"))),
        swap_capacity=int(_number(capacity.get("swap"))),
        cpu_allocatable=_number(allocatable["cpu"]) if "cpu" in allocatable else None,
        memory_allocatable=(
            int(_number(allocatable["memory"])) if "memory" in allocatable else None
        ),
        gate_held=readiness.get("gateHeld") is True,
        waiting_for=tuple(str(item) for item in readiness.get("waitingFor") or ()),
        shutdown=str(shutdown.get("state") or "none"),
        shutdown_start=_time(shutdown.get("startTime")),
        budget_end=_time(shutdown.get("budgetEnd")),
        agent_stopped=status.get("agentStopped") is True,
        pods=pods,
        boot_id=str(status.get("bootID") or ""),
    )


def _compact(obj: JsonObject) -> JsonObject:
    """What the reflector stores: the name (its key) and the projection, nothing else."""
    metadata = obj.get("metadata") or {}
    return {"metadata": {"name": metadata.get("name")}, _PROJECTION: project(obj)}


class NodeReportCache:
    """Every NodeReport in the cluster, projected; questions are answered from memory."""

    def __init__(
        self,
        api: KubeApi,
        *,
        now: Callable[[], float] = time.time,
        watch_timeout: float = 300.0,
        read_timeout: float = 90.0,
    ) -> None:
        self.now = now
        self.reflector = Reflector(
            api,
            NODE_REPORTS,
            name="nodereports",
            watch_timeout=watch_timeout,
            read_timeout=read_timeout,
            transform=_compact,
        )
        self._pods: dict[str, tuple[str, PodUsage]] = {}
        """Pod UID -> (node, usage); kept in step with the store by ``_on_event``."""
        self._pod_uids: dict[str, frozenset[str]] = {}
        self.reflector.subscribe(self._on_event)

    # -- the index --------------------------------------------------------------------

    def _on_event(self, kind: str, obj: JsonObject | None) -> None:
        if kind == "SYNCED":
            self._pods.clear()
            self._pod_uids.clear()
            for item in self.reflector.items():
                self._index(item[_PROJECTION])
            return
        if obj is None:
            return
        report: NodeUsageReport = obj[_PROJECTION]
        self._unindex(report.node)
        if kind != "DELETED":
            self._index(report)

    def _index(self, report: NodeUsageReport) -> None:
        self._unindex(report.node)
        for pod in report.pods:
            self._pods[pod.uid] = (report.node, pod)
        self._pod_uids[report.node] = frozenset(pod.uid for pod in report.pods)

    def _unindex(self, node: str) -> None:
        for uid in self._pod_uids.pop(node, frozenset()):
            if (entry := self._pods.get(uid)) is not None and entry[0] == node:
                del self._pods[uid]

    def subscribe_reports(
        self, listener: Callable[[str, NodeUsageReport | None], None]
    ) -> Callable[[], None]:
        """Hear each event as ``(kind, report)``; ``("SYNCED", None)`` after each (re)list."""

        def relay(kind: str, obj: JsonObject | None) -> None:
            listener(kind, None if obj is None else obj[_PROJECTION])

        return self.reflector.subscribe(relay)

    # -- questions --------------------------------------------------------------------

    def _report(self, node: str) -> NodeUsageReport | None:
        item = self.reflector.get(node)
        return None if item is None else item[_PROJECTION]

    def node(self, node: str) -> NodeUsageReport | None:
        """The node's report, ``None`` when there is none or it is stale."""
        report = self._report(node)
        return None if report is None or report.stale(self.now()) else report

    def pod(self, uid: str) -> PodUsage | None:
        entry = self._pods.get(uid)
        if entry is None or self.node(entry[0]) is None:
            return None
        return entry[1]

    def stale(self, node: str) -> bool:
        return self.node(node) is None

    def shutting_down(self, node: str) -> bool:
        report = self.node(node)
        return report is not None and report.shutdown != "none"

    def gated(self, node: str) -> bool:
        report = self.node(node)
        return report is not None and report.gate_held

    def stopped(self, node: str) -> bool:
        report = self.node(node)
        return report is not None and report.agent_stopped

    def all_reports(self) -> list[NodeUsageReport]:
        """Every report, stale ones included (``NodeUsageReport.stale`` tells which)."""
        return [item[_PROJECTION] for item in self.reflector.items()]

    def reports(self) -> list[NodeUsageReport]:
        now = self.now()
        return [
            report
            for item in self.reflector.items()
            if not (report := item[_PROJECTION]).stale(now)
        ]
