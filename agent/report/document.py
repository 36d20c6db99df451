"""The NodeReport's ``status`` document, built from the tracker, the pods and the board (pure).

Field names are short because the list of pods is most of the document and 5,000 agents
write it: a pod entry is ``{namespace, name, uid, cpu, memory, swap}`` (cores, bytes,
bytes). ``usage`` holds the smoothed values and, under ``latest``, the newest raw ones.
``cpuPercent``/``memoryPercent`` are there for ``kubectl get``'s columns. Node-only
(``pods`` is ``None``): pods are listed by cgroup UID alone, with no cluster fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.kubesemantics.pods import MIRROR_ANNOTATION, is_finished
from agent.kubesemantics.quantities import parse_quantity, quantity_to_millis
from agent.kubesemantics.timestamps import rfc3339
from agent.report.usage import Usage, UsageTracker
from agent.runtime.status import BoardSnapshot, ShutdownStatus

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Identity:
    agent_version: str
    boot_id: str
    heartbeat_seconds: float


@dataclass(frozen=True)
class Capacity:
    cpus: int
    memory: int
    swap: int


def allocatable(node: Mapping[str, Any] | None) -> JsonObject | None:
    """``{cpu: cores, memory: bytes}`` from the Node's ``status.allocatable``, if known."""
    values = ((node or {}).get("status") or {}).get("allocatable") or {}
    try:
        cpu = quantity_to_millis(values["cpu"]) / 1000
        memory = int(parse_quantity(values["memory"]))
    except (KeyError, ValueError, TypeError, ArithmeticError):
        return None
    return {"cpu": cpu, "memory": memory}


def _cores(value: float) -> float:
    return round(value, 3)


def _percent(part: float, whole: float) -> int:
    return round(100 * part / whole) if whole > 0 else 0


def _pressure(values: Mapping[str, Mapping[str, float]]) -> JsonObject:
    return {
        resource: {kind: round(value, 2) for kind, value in kinds.items()}
        for resource, kinds in values.items()
    }


def _usage(usage: Usage) -> JsonObject:
    document: JsonObject = {
        "cpu": _cores(usage.cpu_cores),
        "memory": round(usage.memory_working_set),
        "swap": round(usage.swap),
    }
    if usage.pressure:
        document["pressure"] = _pressure(usage.pressure)
    return document


def _pod_entry(usage: Usage) -> JsonObject:
    return {
        "cpu": _cores(usage.cpu_cores),
        "memory": round(usage.memory_working_set),
        "swap": round(usage.swap),
    }


def pod_entries(
    smoothed: Mapping[str, Usage], pods: Iterable[Mapping[str, Any]] | None
) -> list[JsonObject]:
    """One entry per pod with a measured cgroup; cgroups no pod claims are left out.

    A pod's cgroup carries its UID; a static pod's carries its manifest's UID, which the
    mirror pod shows in ``kubernetes.io/config.mirror`` (the swap audit's rule).
    """
    if pods is None:
        return [{"uid": uid, **_pod_entry(usage)} for uid, usage in sorted(smoothed.items())]
    entries = []
    for pod in pods:
        if is_finished(pod):
            continue
        metadata = pod.get("metadata") or {}
        uid = str(metadata.get("uid") or "")
        mirror = (metadata.get("annotations") or {}).get(MIRROR_ANNOTATION)
        usage = smoothed.get(uid) or (smoothed.get(mirror) if isinstance(mirror, str) else None)
        if usage is None:
            continue
        entries.append(
            {
                "namespace": str(metadata.get("namespace") or ""),
                "name": str(metadata.get("name") or ""),
                "uid": uid,
                **_pod_entry(usage),
            }
        )
    entries.sort(key=lambda entry: (entry["namespace"], entry["name"]))
    return entries


def _shutdown(status: ShutdownStatus | None) -> JsonObject:
    status = status or ShutdownStatus()
    document: JsonObject = {"state": status.state}
    if status.start_time is not None:
        document["startTime"] = rfc3339(status.start_time)
    if status.phase_priority is not None:
        document["phase"] = status.phase_priority
    if status.budget_end is not None:
        document["budgetEnd"] = rfc3339(status.budget_end)
    return document


def build_status(
    *,
    identity: Identity,
    capacity: Capacity,
    tracker: UsageTracker,
    board: BoardSnapshot,
    observed_time: float,
    node: Mapping[str, Any] | None = None,
    pods: Iterable[Mapping[str, Any]] | None = None,
    agent_stopped: bool = False,
) -> JsonObject:
    smoothed = tracker.node_smoothed or tracker.node_latest or Usage()
    latest = tracker.node_latest or Usage()
    usage = _usage(smoothed)
    usage["cpuPercent"] = _percent(smoothed.cpu_cores, capacity.cpus)
    usage["memoryPercent"] = _percent(smoothed.memory_working_set, capacity.memory)
    usage["latest"] = _usage(latest)
    sections = board_sections(board)
    status: JsonObject = {
        "observedTime": rfc3339(observed_time),
        "agentVersion": identity.agent_version,
        "bootID": identity.boot_id,
        "heartbeatSeconds": round(identity.heartbeat_seconds),
        "agentStopped": agent_stopped,
        "capacity": {"cpu": capacity.cpus, "memory": capacity.memory, "swap": capacity.swap},
        "usage": usage,
        "pods": pod_entries(tracker.pods_smoothed, pods),
        "shutdown": sections.pop("shutdown"),
    }
    if (node_allocatable := allocatable(node)) is not None:
        status["allocatable"] = node_allocatable
    status.update(sections)  # swap, readiness
    return status


BOARD_SECTIONS = ("readiness", "shutdown", "swap")
"""The status keys that come from the other capabilities, through the status board."""


def board_sections(board: BoardSnapshot) -> JsonObject:
    """``shutdown`` (always), ``swap`` and ``readiness`` (once published), as in the status."""
    sections: JsonObject = {"shutdown": _shutdown(board.shutdown)}
    if board.swap is not None:
        sections["swap"] = {
            "behavior": board.swap.behavior,
            "cgroupV2": board.swap.cgroup_v2,
            "noswapSupported": board.swap.noswap_supported,
            "driftedContainers": list(board.swap.drifted),
        }
    if board.readiness is not None:
        sections["readiness"] = {
            "gateHeld": board.readiness.gate_held,
            "waitingFor": list(board.readiness.waiting_for),
        }
    return sections


def state_key(board: BoardSnapshot) -> tuple[object, ...]:
    """What counts as a state change for the write policy: gate, shutdown, swap drift."""
    readiness = board.readiness
    swap = board.swap
    return (
        None if readiness is None else (readiness.gate_held, readiness.waiting_for),
        board.shutdown,
        None if swap is None else swap.drifted,
    )
