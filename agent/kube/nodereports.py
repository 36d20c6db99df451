"""The descheduler's view of every node's NodeReport: a watch-fed cache of compact projections.

Why a cache: the descheduler asks about many nodes and pods per cycle, and the reports change
about 83 times a second in a 5,000-node cluster; one list+watch (``Reflector``: initial list,
bookmarks, relist on 410 Gone) keeps it current with no request per question. Each object is
projected on the watch thread into a frozen ``NodeUsageReport`` (plain fields, a few hundred
bytes per pod less than the JSON), so the raw documents are never kept.

What is projected is what the writer *said*, never trusted here: a report is written by one
node's agent, and a descheduler that believed it blindly would let one node steer the cluster.
So the projection never raises and never lets a value through that could break arithmetic
later: a field that is not a finite, non-negative number of the right type (or a timestamp
that does not parse, or a heartbeat outside ``HEARTBEAT_RANGE``) is read as 0 or ``None``
and named in ``problems`` with its path. Who owns the report (``owners``) is kept, so that the
descheduler can check it against the Node. Whether a report is believed at all is the
descheduler's decision (``agent.descheduler.cache.usage``), made with the Node in hand.

The cache also records **when this process last saw each report change**, on its own
monotonic clock: the only time of a report the descheduler can check. A report that stops
changing goes stale however its ``observedTime`` was written. Whether the change was
*witnessed* is kept too: a report found by the first list was there before this process
looked, so when it last changed is not known, only that it was no later than then.

API (everything on the event loop thread)::

    cache = NodeReportCache(api, monotonic=time.monotonic)   # run ``cache.reflector``
    cache.all_reports()  -> list[NodeUsageReport]
    cache.entries()      -> list[Seen]   # each report, when it was seen to change, witnessed
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from agent.kube.api import KubeApi
from agent.kube.jsontypes import JsonObject
from agent.kube.reflector import Reflector
from agent.kube.resources import NODE_REPORTS
from agent.kubesemantics.timestamps import parse_rfc3339

STALE_HEARTBEATS = 3
DEFAULT_HEARTBEAT = 60.0
HEARTBEAT_RANGE = (1.0, 3600.0)
"""Heartbeats outside this range are implausible: a report that claims a day-long heartbeat
would otherwise never go stale."""
MAX_AMOUNT = 2**63 - 1
"""The largest amount (bytes, or cores) a report may state: what the API's int64 holds."""
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
class ReportOwner:
    """One ``metadata.ownerReferences`` entry of a report."""

    api_version: str
    kind: str
    name: str
    uid: str


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
    owners: tuple[ReportOwner, ...] = ()
    """``metadata.ownerReferences`` as written."""
    problems: tuple[str, ...] = ()
    """Fields that were not what the schema allows, each as ``path: what was wrong``; the
    values above hold 0 or ``None`` in their place."""

    @property
    def stale_after(self) -> float:
        """How long the report counts after it last changed: ``STALE_HEARTBEATS`` heartbeats."""
        return STALE_HEARTBEATS * self.heartbeat_seconds


class Seen(NamedTuple):
    """A report, and what this process knows of its last change."""

    report: NodeUsageReport
    at: float
    """Monotonic time this process saw the report as it is now (first saw it, if not
    ``witnessed``)."""
    witnessed: bool
    """This process saw the report change to what it is (a watch event, or a relist that
    found it different); ``False`` for one found by the first list."""


class _Reader:
    """Reads fields of one report, noting every one that is not what the schema allows."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def amount(self, value: Any, path: str) -> float:  # noqa: PLR0911 - one exit per way a value is wrong
        """A finite number >= 0 (absent: 0); anything else is a problem, read as 0."""
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problems.append(f"{path}: not a number ({type(value).__name__})")
            return 0.0
        try:
            number = float(value)
        except OverflowError:
            self.problems.append(f"{path}: too large")
            return 0.0
        if not math.isfinite(number):
            self.problems.append(f"{path}: not finite")
            return 0.0
        if number < 0:
            self.problems.append(f"{path}: negative ({number:g})")
            return 0.0
        if number > MAX_AMOUNT:
            self.problems.append(f"{path}: too large ({number:g})")
            return 0.0
        return number

    def whole(self, value: Any, path: str) -> int:
        return int(self.amount(value, path))

    def time(self, value: Any, path: str) -> float | None:
        if value is None:
            return None
        if not isinstance(value, str):
            self.problems.append(f"{path}: not a timestamp")
            return None
        try:
            return parse_rfc3339(value)
        except (ValueError, OverflowError):
            self.problems.append(f"{path}: not an RFC 3339 timestamp ({value[:40]!r})")
            return None

    def section(self, status: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = status.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.problems.append(f"{path}.{key}: not an object")
            return {}
        return value

    def heartbeat(self, value: Any) -> float:
        if value is None:
            return DEFAULT_HEARTBEAT
        seconds = self.amount(value, "status.heartbeatSeconds")
        low, high = HEARTBEAT_RANGE
        if not low <= seconds <= high:
            self.problems.append(
                f"status.heartbeatSeconds: {seconds:g} is outside {low:g}..{high:g}"
            )
            return DEFAULT_HEARTBEAT
        return seconds


def _owners(metadata: Mapping[str, Any]) -> tuple[ReportOwner, ...]:
    raw = metadata.get("ownerReferences")
    if not isinstance(raw, list):
        return ()
    return tuple(
        ReportOwner(
            api_version=str(owner.get("apiVersion") or ""),
            kind=str(owner.get("kind") or ""),
            name=str(owner.get("name") or ""),
            uid=str(owner.get("uid") or ""),
        )
        for owner in raw
        if isinstance(owner, Mapping)
    )


def _pods(raw: Any, read: _Reader) -> tuple[PodUsage, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        read.problems.append("status.pods: not a list")
        return ()
    pods = []
    for index, pod in enumerate(raw):
        path = f"status.pods[{index}]"
        if not isinstance(pod, Mapping):
            read.problems.append(f"{path}: not an object")
            continue
        if not pod.get("uid"):
            continue
        pods.append(
            PodUsage(
                namespace=str(pod.get("namespace") or ""),
                name=str(pod.get("name") or ""),
                uid=str(pod.get("uid")),
                cpu_cores=read.amount(pod.get("cpu"), f"{path}.cpu"),
                memory_bytes=read.whole(pod.get("memory"), f"{path}.memory"),
                swap_bytes=read.whole(pod.get("swap"), f"{path}.swap"),
            )
        )
    return tuple(pods)


def project(obj: Mapping[str, Any]) -> NodeUsageReport:
    """A NodeReport object as the plain, frozen view; never raises (see ``problems``)."""
    read = _Reader()
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    status = obj.get("status")
    if status is not None and not isinstance(status, Mapping):
        read.problems.append("status: not an object")
    status = status if isinstance(status, Mapping) else {}
    usage = read.section(status, "usage", "status")
    capacity = read.section(status, "capacity", "status")
    allocatable = read.section(status, "allocatable", "status")
    readiness = read.section(status, "readiness", "status")
    shutdown = read.section(status, "shutdown", "status")
    waiting = readiness.get("waitingFor")
    return NodeUsageReport(
        node=str(metadata.get("name") or ""),
        observed_time=read.time(status.get("observedTime"), "status.observedTime"),
        heartbeat_seconds=read.heartbeat(status.get("heartbeatSeconds")),
        cpu_cores=read.amount(usage.get("cpu"), "status.usage.cpu"),
        memory_bytes=read.whole(usage.get("memory"), "status.usage.memory"),
        swap_bytes=read.whole(usage.get("swap"), "status.usage.swap"),
        cpu_capacity=read.amount(capacity.get("cpu"), "status.capacity.cpu"),
        memory_capacity=read.whole(capacity.get("memory"), "status.capacity.memory"),
        swap_capacity=read.whole(capacity.get("swap"), "status.capacity.swap"),
        cpu_allocatable=(
            read.amount(allocatable["cpu"], "status.allocatable.cpu")
            if "cpu" in allocatable
            else None
        ),
        memory_allocatable=(
            read.whole(allocatable["memory"], "status.allocatable.memory")
            if "memory" in allocatable
            else None
        ),
        gate_held=readiness.get("gateHeld") is True,
        waiting_for=tuple(str(item) for item in waiting) if isinstance(waiting, list) else (),
        shutdown=str(shutdown.get("state") or "none"),
        shutdown_start=read.time(shutdown.get("startTime"), "status.shutdown.startTime"),
        budget_end=read.time(shutdown.get("budgetEnd"), "status.shutdown.budgetEnd"),
        agent_stopped=status.get("agentStopped") is True,
        pods=_pods(status.get("pods"), read),
        boot_id=str(status.get("bootID") or ""),
        owners=_owners(metadata),
        problems=tuple(read.problems),
    )


def _compact(obj: JsonObject) -> JsonObject:
    """What the reflector stores: the name (its key) and the projection, nothing else."""
    metadata = obj.get("metadata") or {}
    return {"metadata": {"name": metadata.get("name")}, _PROJECTION: project(obj)}


class NodeReportCache:
    """Every NodeReport in the cluster, projected, with when this process saw it change."""

    def __init__(
        self,
        api: KubeApi,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        watch_timeout: float = 300.0,
        read_timeout: float = 90.0,
    ) -> None:
        self.monotonic = monotonic
        self.reflector = Reflector(
            api,
            NODE_REPORTS,
            name="nodereports",
            watch_timeout=watch_timeout,
            read_timeout=read_timeout,
            transform=_compact,
        )
        self._changed: dict[str, Seen] = {}
        """Report name -> what was seen of it last."""
        self._listed_once = False
        self.reflector.subscribe(self._on_event)

    def _on_event(self, kind: str, obj: JsonObject | None) -> None:
        now = self.monotonic()
        if kind == "SYNCED":
            # A relist carries every report; one equal to what we had did not change. The
            # first list witnessed nothing: the reports were there before we looked.
            known, witnessing = self._changed, self._listed_once
            self._changed, self._listed_once = {}, True
            for item in self.reflector.items():
                self._seen(item[_PROJECTION], now, known, witnessed=witnessing)
            return
        if obj is None:
            return
        report: NodeUsageReport = obj[_PROJECTION]
        if kind == "DELETED":
            self._changed.pop(report.node, None)
        else:
            self._seen(report, now, self._changed, witnessed=True)

    def _seen(
        self, report: NodeUsageReport, now: float, known: Mapping[str, Seen], *, witnessed: bool
    ) -> None:
        before = known.get(report.node)
        if before is not None and before.report == report:
            self._changed[report.node] = before
        else:
            self._changed[report.node] = Seen(report, now, witnessed)

    def subscribe_reports(
        self, listener: Callable[[str, NodeUsageReport | None], None]
    ) -> Callable[[], None]:
        """Hear each event as ``(kind, report)``; ``("SYNCED", None)`` after each (re)list."""

        def relay(kind: str, obj: JsonObject | None) -> None:
            listener(kind, None if obj is None else obj[_PROJECTION])

        return self.reflector.subscribe(relay)

    def all_reports(self) -> list[NodeUsageReport]:
        """Every report, as written (``agent.descheduler.cache.usage`` decides what to believe)."""
        return [item[_PROJECTION] for item in self.reflector.items()]

    def entries(self) -> list[Seen]:
        """Every report, with when this process last saw it change."""
        return list(self._changed.values())
