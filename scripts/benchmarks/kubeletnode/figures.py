"""What a shutdown beside the real kubelet did, computed from what was recorded. Pure.

Four sources, each read by its own parser here and tested on its own:

- the containers' files (``workload.py``): ``start <t>`` and ``TERM <t>`` lines, ``t`` the
  host's Unix time with microseconds, one file per container;
- the agent's JSON log lines: the shutdown's phase lines carry ``wall`` (Unix seconds, the
  same clock as the containers'), ``monotonic`` and ``since_start_seconds``;
- the benchmark's watches of the Node and of every pod: each event with the moment it
  arrived (``time.monotonic``, the harness's clock too) and its ``resourceVersion``. On one
  etcd a resourceVersion is the store's revision, a total order of every write: the taint
  was stored before the first pod write exactly when its revision is lower, whatever the
  watches' delivery did;
- the NodeReport and the kubelet's ``/stats/summary``, for the per-pod usage.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agent.shutdown.phases import bucket_index

MAX_LINE_BYTES = 4096
"""A log line longer than this is not one of ours (and is skipped, not parsed)."""
FILE_SUFFIX = ".log"


# -- the containers' files ------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerLog:
    namespace: str
    pod: str
    uid: str
    container: str
    starts: tuple[float, ...]
    terms: tuple[float, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.pod}"


def parse_container_log(filename: str, text: str) -> ContainerLog | None:
    """One container's file (``<namespace>_<pod>_<uid>_<container>.log``), or ``None`` when
    the name is not one of ours. Lines that are not ``start <t>``/``TERM <t>`` are skipped."""
    if not filename.endswith(FILE_SUFFIX):
        return None
    parts = filename[: -len(FILE_SUFFIX)].split("_")
    if len(parts) != 4 or not all(parts):  # Kubernetes names never hold "_"
        return None
    starts: list[float] = []
    terms: list[float] = []
    for line in text.splitlines():
        kind, _, value = line.strip().partition(" ")
        if kind not in ("start", "TERM") or len(line) > MAX_LINE_BYTES:
            continue
        try:
            when = float(value)
        except ValueError:
            continue
        (starts if kind == "start" else terms).append(when)
    namespace, pod, uid, container = parts
    return ContainerLog(namespace, pod, uid, container, tuple(starts), tuple(terms))


# -- the agent's log ------------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseLog:
    priority: int
    started: float
    """Unix seconds (the agent's ``wall``) of ``shutdown phase started``."""
    pods: int
    ended: float | None = None
    status: str = ""
    gone: int | None = None


@dataclass(frozen=True)
class ShutdownLog:
    """One shutdown, from the agent's log lines."""

    signal_wall: float | None = None
    """When the agent received PrepareForShutdown(true) (``wall - since_start_seconds``)."""
    taint_stored_wall: float | None = None
    taint_waited: float | None = None
    started_untainted: bool = False
    phases: tuple[PhaseLog, ...] = ()
    late_pods: tuple[str, ...] = ()
    released_by: str = ""
    seconds: float | None = None
    lock_released: bool | None = None


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among ``text``'s lines (others, and oversized lines, skipped)."""
    found = []
    for line in text.splitlines():
        if not line.startswith("{") or len(line) > 64 * MAX_LINE_BYTES:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def parse_shutdown(lines: Iterable[dict[str, Any]]) -> ShutdownLog:
    """The first shutdown among ``lines`` (a run's share of the agent's log)."""
    signal_wall = taint_wall = waited = released = seconds = None
    untainted, lock = False, None
    phases: dict[int, PhaseLog] = {}
    late: list[str] = []
    for line in lines:
        event = line.get("event")
        if "wall" in line and "since_start_seconds" in line and signal_wall is None:
            signal_wall = float(line["wall"]) - float(line["since_start_seconds"])
        if event == "shutting-down taint stored; the phases start":
            taint_wall, waited = float(line["wall"]), float(line["waited_seconds"])
        elif str(event).startswith("the shutting-down taint is not stored yet"):
            untainted, waited = True, float(line["waited_seconds"])
        elif event == "shutdown phase started":
            priority = int(line["priority"])
            phases[priority] = PhaseLog(priority, float(line["wall"]), int(line["pods"]))
        elif event == "shutdown phase ended" and int(line["priority"]) in phases:
            begun = phases[int(line["priority"])]
            phases[begun.priority] = PhaseLog(
                begun.priority,
                begun.started,
                int(line["pods"]),
                ended=float(line["wall"]),
                status=str(line["status"]),
                gone=int(line["gone"]),
            )
        elif str(event).startswith("late pod"):
            late.append(str(line.get("pod")))
        elif event == "graceful shutdown finished":
            released, seconds = str(line.get("released_by")), float(line["seconds"])
            lock = bool(line.get("lock_released"))
            break
    return ShutdownLog(
        signal_wall=signal_wall,
        taint_stored_wall=taint_wall,
        taint_waited=waited,
        started_untainted=untainted,
        phases=tuple(sorted(phases.values(), key=lambda p: p.priority)),
        late_pods=tuple(late),
        released_by=released or "",
        seconds=seconds,
        lock_released=lock,
    )


# -- SIGTERM against the phases -------------------------------------------------------------


@dataclass(frozen=True)
class TermTiming:
    """One container's SIGTERM in one shutdown."""

    key: str
    uid: str
    container: str
    phase_priority: int
    phase_started: float
    """Unix seconds of its phase's ``shutdown phase started`` line."""
    after_phase_start: float
    """Seconds from its phase's ``shutdown phase started`` to the TERM line."""
    before_deadline: float
    """Seconds from the TERM line to its phase's deadline (signal + the budgets so far)."""
    after_delete: float | None = None
    """Seconds from the moment the watch showed the pod deleting to the TERM line: the
    kubelet's share (the rest of ``after_phase_start`` is the agent's and the API's)."""

    @property
    def before_delete(self) -> float | None:
        """Seconds from the phase's start to the pod seen deleting: the agent's share (its
        requests, the API server's answer, the watch's delivery)."""
        return None if self.after_delete is None else self.after_phase_start - self.after_delete


def term_timings(
    logs: Iterable[ContainerLog],
    priorities: dict[str, int],
    shutdown: ShutdownLog,
    buckets: Sequence[tuple[int, int]],
    *,
    since: float,
    until: float,
    deleting: dict[str, float] | None = None,
) -> tuple[list[TermTiming], list[str]]:
    """Each TERM between ``since`` and ``until`` (Unix seconds) of a pod in ``priorities``
    (pod uid -> its priority) against the phase its bucket runs in; and the containers of
    those pods that got no TERM in that window. ``deleting`` (uid -> Unix seconds the pod
    was seen deleting) splits each delay into the agent's share and the kubelet's."""
    ordered = sorted(buckets)
    levels = [priority for priority, _ in ordered]
    deadlines, total = {}, 0
    for priority, seconds in ordered:
        total += seconds
        deadlines[priority] = total
    started = {phase.priority: phase.started for phase in shutdown.phases}
    timings, silent = [], []
    seen_deleting = deleting or {}
    for log in logs:
        if log.uid not in priorities:
            continue
        terms = [t for t in log.terms if since <= t <= until]
        if not terms:
            silent.append(f"{log.key}/{log.container}")
            continue
        bucket = levels[bucket_index(levels, priorities[log.uid])]
        if bucket not in started or shutdown.signal_wall is None:
            silent.append(f"{log.key}/{log.container} (its phase never started)")
            continue
        deadline = shutdown.signal_wall + deadlines[bucket]
        deleted = seen_deleting.get(log.uid)
        timings.append(
            TermTiming(
                key=log.key,
                uid=log.uid,
                container=log.container,
                phase_priority=bucket,
                phase_started=started[bucket],
                after_phase_start=terms[0] - started[bucket],
                before_deadline=deadline - terms[0],
                after_delete=None if deleted is None else terms[0] - deleted,
            )
        )
    return timings, silent


def terms_in(logs: Iterable[ContainerLog], uids: set[str], since: float, until: float) -> list[str]:
    """Containers of the pods ``uids`` that got a TERM between ``since`` and ``until``."""
    return [
        f"{log.key}/{log.container}"
        for log in logs
        if log.uid in uids and any(since <= t <= until for t in log.terms)
    ]


def first_term(logs: Iterable[ContainerLog], uids: set[str], since: float) -> float | None:
    """The earliest TERM at or after ``since`` among the pods ``uids``."""
    return min(
        (t for log in logs if log.uid in uids for t in log.terms if t >= since), default=None
    )


# -- the watches: order of writes, bindings -------------------------------------------------


@dataclass(frozen=True)
class PodSeen:
    at: float
    """``time.monotonic`` when the event arrived."""
    revision: int
    kind: str
    namespace: str
    name: str
    uid: str
    node: str
    deleting: bool
    disruption_target: bool
    ready: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class NodeSeen:
    at: float
    revision: int
    taints: frozenset[str]


def pod_seen(at: float, kind: str, pod: dict[str, Any]) -> PodSeen:
    """A watch event's pod, reduced to what the figures read."""
    meta = pod.get("metadata") or {}
    conditions = (pod.get("status") or {}).get("conditions") or []

    def true(kind: str) -> bool:
        return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)

    return PodSeen(
        at=at,
        revision=int(meta.get("resourceVersion") or 0),
        kind=kind,
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        disruption_target=true("DisruptionTarget"),
        ready=true("Ready"),
    )


def node_seen(at: float, node: dict[str, Any]) -> NodeSeen:
    taints = (node.get("spec") or {}).get("taints") or []
    return NodeSeen(
        at=at,
        revision=int((node.get("metadata") or {}).get("resourceVersion") or 0),
        taints=frozenset(str(t.get("key")) for t in taints),
    )


@dataclass(frozen=True)
class WriteOrder:
    """The shutting-down taint against the shutdown's first pod write, by revision."""

    taint_revision: int | None
    first_pod_write_revision: int | None
    first_pod_write: str
    """``namespace/name`` and what was written (``deleting`` or ``DisruptionTarget``)."""
    taint_seen_at: float | None
    first_write_seen_at: float | None

    @property
    def taint_first(self) -> bool:
        return (
            self.taint_revision is not None
            and self.first_pod_write_revision is not None
            and self.taint_revision < self.first_pod_write_revision
        )


def write_order(
    nodes: Iterable[NodeSeen], pods: Iterable[PodSeen], taint: str, node: str, after: int
) -> WriteOrder:
    """The first Node revision above ``after`` carrying ``taint``, and the first write above
    ``after`` that marked a pod of ``node`` deleting or a DisruptionTarget."""
    tainted = min(
        (n for n in nodes if n.revision > after and taint in n.taints),
        key=lambda n: n.revision,
        default=None,
    )
    writes = [
        p
        for p in pods
        if p.revision > after and p.node == node and (p.deleting or p.disruption_target)
    ]
    first = min(writes, key=lambda p: p.revision, default=None)
    what = ""
    if first is not None:
        what = f"{first.key} {'DisruptionTarget' if first.disruption_target else 'deleting'}"
    return WriteOrder(
        taint_revision=tainted.revision if tainted else None,
        first_pod_write_revision=first.revision if first else None,
        first_pod_write=what,
        taint_seen_at=tainted.at if tainted else None,
        first_write_seen_at=first.at if first else None,
    )


def taint_lifted_at(nodes: Iterable[NodeSeen], taint: str, after: float) -> float | None:
    """When the watch first showed the Node without ``taint`` after ``after`` (monotonic)."""
    return min((n.at for n in nodes if n.at > after and taint not in n.taints), default=None)


def taint_removed_revision(nodes: Iterable[NodeSeen], taint: str, after: int) -> int | None:
    """The first Node revision above ``after`` without ``taint``."""
    return min(
        (n.revision for n in nodes if n.revision > after and taint not in n.taints), default=None
    )


@dataclass(frozen=True)
class Binding:
    key: str
    uid: str
    at: float
    """When the watch first showed the pod bound to the node."""
    created_at: float
    """When the watch first showed the pod at all."""
    revision: int = 0
    """The binding's own write (the first revision that shows the pod on the node)."""


def bindings(pods: Iterable[PodSeen], node: str) -> list[Binding]:
    """Every pod the watch saw bound to ``node``, at the first event that showed it so."""
    first_seen: dict[str, float] = {}
    found: dict[str, Binding] = {}
    for pod in sorted(pods, key=lambda p: (p.at, p.revision)):
        first_seen.setdefault(pod.uid, pod.at)
        if pod.node == node and pod.uid not in found:
            found[pod.uid] = Binding(pod.key, pod.uid, pod.at, first_seen[pod.uid], pod.revision)
    return list(found.values())


@dataclass
class BindingWindow:
    """Pods bound during the shutdown, and the replacements kept off the node."""

    bound: list[str] = field(default_factory=list)
    """Pods bound during the shutdown (must be none)."""
    waited: list[float] = field(default_factory=list)
    """For each pod created during the shutdown and bound after it: seconds from the
    release to its binding (the scheduler would have placed it: it did, once it could)."""
    created: int = 0


def binding_window(
    found: Iterable[Binding],
    start: float,
    end: float,
    *,
    tainted: tuple[int | None, int | None] = (None, None),
) -> BindingWindow:
    """Bindings the watch showed from ``start`` (PrepareForShutdown(true)) to ``end`` (the
    release), and any binding written while the taint was on (between the revisions in
    ``tainted``: added, removed): the second catches one the watch delivered late. A pod
    first seen in the window is a replacement made during the shutdown."""
    added, removed = tainted
    window = BindingWindow()
    for binding in found:
        under_taint = (added is not None and binding.revision > added) and (
            removed is None or binding.revision < removed
        )
        if start <= binding.at <= end or under_taint:
            window.bound.append(binding.key)
        elif start <= binding.created_at <= end:
            window.created += 1
            window.waited.append(binding.at - end)
    return window


def deleting_at(pods: Iterable[PodSeen], after: float) -> dict[str, float]:
    """uid -> when the watch first showed the pod deleting, after ``after`` (monotonic)."""
    return _first(pods, after, lambda pod: pod.deleting)


def marked_at(pods: Iterable[PodSeen], after: float) -> dict[str, float]:
    """uid -> when the watch first showed the pod's DisruptionTarget, after ``after``."""
    return _first(pods, after, lambda pod: pod.disruption_target)


def _first(
    pods: Iterable[PodSeen], after: float, test: Callable[[PodSeen], bool]
) -> dict[str, float]:
    found: dict[str, float] = {}
    for pod in pods:
        if test(pod) and pod.at > after and pod.at < found.get(pod.uid, float("inf")):
            found[pod.uid] = pod.at
    return found


def ready_since(pod: dict[str, Any]) -> float | None:
    """Unix seconds since when ``pod`` has been Ready (its condition's transition, to the
    second), or ``None`` when it is not Ready."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            stamp = str(condition.get("lastTransitionTime") or "")
            try:
                return (
                    datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
                )
            except ValueError:
                return None
    return None


def ready_at(pods: Iterable[PodSeen], key: str, after: float) -> float | None:
    """When the watch first showed ``key`` Ready after ``after``."""
    return min((p.at for p in pods if p.key == key and p.ready and p.at > after), default=None)


# -- usage: the NodeReport against the kubelet ----------------------------------------------


@dataclass(frozen=True)
class UsagePair:
    key: str
    report_cpu: float
    """Cores."""
    kubelet_cpu: float
    report_memory: int
    """Bytes (working set)."""
    kubelet_memory: int


def compare_usage(
    report_pods: Iterable[dict[str, Any]], summary: dict[str, Any]
) -> tuple[list[UsagePair], list[str], list[str]]:
    """The pods both sides show (by uid), and those only the kubelet's summary shows, and
    those only the report shows."""
    kubelet: dict[str, tuple[str, float, int]] = {}
    for pod in summary.get("pods") or []:
        ref = pod.get("podRef") or {}
        cpu = (pod.get("cpu") or {}).get("usageNanoCores")
        memory = (pod.get("memory") or {}).get("workingSetBytes")
        if ref.get("uid") and cpu is not None and memory is not None:
            key = f"{ref.get('namespace')}/{ref.get('name')}"
            kubelet[str(ref["uid"])] = (key, int(cpu) / 1e9, int(memory))
    pairs, only_report = [], []
    seen = set()
    for pod in report_pods:
        uid = str(pod.get("uid") or "")
        if uid not in kubelet:
            only_report.append(f"{pod.get('namespace')}/{pod.get('name')}")
            continue
        seen.add(uid)
        key, cpu, memory = kubelet[uid]
        pairs.append(UsagePair(key, float(pod["cpu"]), cpu, int(pod["memory"]), memory))
    only_kubelet = [key for uid, (key, _, _) in kubelet.items() if uid not in seen]
    return pairs, sorted(only_kubelet), sorted(only_report)


def median_or_nan(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


# -- the one-shot commands ------------------------------------------------------------------


def command_summary(stdout: str) -> tuple[bool, str]:
    """Whether a ``--json`` command's stdout is one JSON document, and what it says in a
    line: doctor's warnings, the report's pods, the swap report's container states."""
    try:
        document = json.loads(stdout)
    except ValueError as error:
        return False, f"not JSON: {error}"
    if not isinstance(document, dict):
        return True, f"a {type(document).__name__}"
    parts = []
    if isinstance(warnings := document.get("warnings"), list):
        parts.append(f"{len(warnings)} warnings" + (f", first: {warnings[0]}" if warnings else ""))
    if isinstance(pods := (document.get("status") or {}).get("pods"), list):
        parts.append(f"{len(pods)} pods")
    if isinstance(containers := document.get("containers"), list):
        states: dict[str, int] = {}
        for container in containers:
            state = str(container.get("state")) if isinstance(container, dict) else "?"
            states[state] = states.get(state, 0) + 1
        parts.append(
            f"{len(containers)} containers: "
            + ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
        )
    return True, "; ".join(parts) or f"keys {', '.join(sorted(document))[:120]}"
