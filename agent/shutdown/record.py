"""The shutdown state file's model: what was started, on which boot, and how far it got.

kubelet keeps ``{"startTime", "endTime"}`` (RFC 3339) so its gauges survive a reboot; we
keep those two keys with the same meaning, so tools that read kubelet's file can read
ours, and add what a restart needs to carry on: the boot ID (to tell "the agent
restarted mid-shutdown" from "the node rebooted"), the start on the monotonic clock (so a
resumed shutdown keeps its original deadlines even if the wall clock jumps), the phases
and their progress.

The phases' deadline offsets and the budget are the phase plan's
(``agent.config.shutdown.phase_windows``), kept as the plan gave them: the deadlines of a
resumed shutdown are read from here, never summed again.

Pure: ``to_json``/``from_json`` convert to and from plain dicts; the adapter does the I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agent.config.shutdown import PriorityBucket, phase_windows
from agent.kubesemantics.timestamps import parse_rfc3339, rfc3339
from agent.shutdown.phases import total_seconds

SCHEMA_VERSION = 1


class ShutdownStatus(StrEnum):
    RUNNING = "running"
    """Phases in progress (the lock is held, or logind refused a new one)."""
    FINISHED = "finished"
    """Phases over or budget spent, lock released: the node is expected to go down."""
    CANCELLED = "cancelled"
    """logind called it off (PrepareForShutdown(false)); the taint was removed."""
    COMPLETE = "complete"
    """The node rebooted afterwards; the taint was removed at the next start."""


class PhaseStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    """Every pod of the phase was gone before its deadline."""
    TIMED_OUT = "timed-out"
    """The deadline came with pods still present."""
    EMPTY = "empty"
    """No pods in this bucket: skipped at once, like kubelet skips empty groups."""
    CANCELLED = "cancelled"


OPEN_PHASES = frozenset({PhaseStatus.PENDING, PhaseStatus.RUNNING})


class StateFileError(ValueError):
    """The state file is not a document we wrote; the message names the field."""


@dataclass(frozen=True)
class PhaseRecord:
    priority: int
    budget_seconds: int
    deadline_offset_seconds: int
    status: PhaseStatus = PhaseStatus.PENDING
    pods: int = 0
    terminated: int = 0
    start_time: float | None = None
    end_time: float | None = None

    @property
    def duration(self) -> float | None:
        if self.start_time is None or self.end_time is None:
            return None
        return max(0.0, self.end_time - self.start_time)


@dataclass(frozen=True)
class ShutdownRecord:
    start_time: float
    """Unix seconds."""
    boot_id: str
    start_monotonic: float | None
    """``time.monotonic()`` at the start; meaningful on the same boot only."""
    budget_seconds: int
    mode: str
    status: ShutdownStatus
    phases: tuple[PhaseRecord, ...]
    end_time: float | None = None
    released_by: str = ""
    """Why the lock went: ``phases-done``, ``budget``, ``watchdog``, ``cancelled``, ``stopped``."""

    @property
    def open(self) -> bool:
        return self.status is ShutdownStatus.RUNNING

    @property
    def buckets(self) -> tuple[PriorityBucket, ...]:
        """The buckets this shutdown started with (a resumed run keeps them, not today's
        config)."""
        return tuple(PriorityBucket(phase.priority, phase.budget_seconds) for phase in self.phases)

    def with_phase(self, index: int, **changes: Any) -> ShutdownRecord:
        phases = list(self.phases)
        phases[index] = dataclasses.replace(phases[index], **changes)
        return dataclasses.replace(self, phases=tuple(phases))

    def closed(self, status: ShutdownStatus, *, end_time: float | None, why: str) -> ShutdownRecord:
        """This record with its status set, and any phase still open marked as ``why`` left it."""
        phase_status = (
            PhaseStatus.CANCELLED if status is ShutdownStatus.CANCELLED else PhaseStatus.TIMED_OUT
        )
        phases = tuple(
            dataclasses.replace(phase, status=phase_status)
            if phase.status in OPEN_PHASES
            else phase
            for phase in self.phases
        )
        return dataclasses.replace(
            self,
            status=status,
            phases=phases,
            end_time=self.end_time if end_time is None else end_time,
            released_by=self.released_by or why,
        )

    # -- JSON ---------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "version": SCHEMA_VERSION,
            "startTime": rfc3339(self.start_time, micros=True),
            "bootID": self.boot_id,
            "startMonotonic": self.start_monotonic,
            "budgetSeconds": self.budget_seconds,
            "mode": self.mode,
            "status": self.status.value,
            "releasedBy": self.released_by,
            "phases": [_phase_json(phase) for phase in self.phases],
        }
        if self.end_time is not None:
            document["endTime"] = rfc3339(self.end_time, micros=True)
        return document

    @classmethod
    def from_json(cls, document: Any) -> ShutdownRecord:
        """Parse a document we wrote; ``StateFileError`` names the first bad field."""
        if not isinstance(document, dict):
            raise StateFileError("the document must be a JSON object")
        reader = _Reader(document, "")
        phases_raw = reader.value("phases", list)
        return cls(
            start_time=reader.time("startTime"),
            end_time=reader.time("endTime", optional=True),
            boot_id=reader.value("bootID", str),
            start_monotonic=reader.number("startMonotonic", optional=True),
            budget_seconds=reader.value("budgetSeconds", int),
            mode=reader.value("mode", str),
            status=reader.choice("status", ShutdownStatus),
            released_by=str(document.get("releasedBy") or ""),
            phases=tuple(
                _phase_from_json(raw, f"phases[{index}]") for index, raw in enumerate(phases_raw)
            ),
        )


def _phase_json(phase: PhaseRecord) -> dict[str, Any]:
    document: dict[str, Any] = {
        "priority": phase.priority,
        "budgetSeconds": phase.budget_seconds,
        "deadlineOffsetSeconds": phase.deadline_offset_seconds,
        "status": phase.status.value,
        "pods": phase.pods,
        "terminated": phase.terminated,
    }
    if phase.start_time is not None:
        document["startTime"] = rfc3339(phase.start_time, micros=True)
    if phase.end_time is not None:
        document["endTime"] = rfc3339(phase.end_time, micros=True)
    return document


def _phase_from_json(raw: Any, path: str) -> PhaseRecord:
    if not isinstance(raw, dict):
        raise StateFileError(f"{path}: must be a JSON object")
    reader = _Reader(raw, path)
    return PhaseRecord(
        priority=reader.value("priority", int),
        budget_seconds=reader.value("budgetSeconds", int),
        deadline_offset_seconds=reader.value("deadlineOffsetSeconds", int),
        status=reader.choice("status", PhaseStatus),
        pods=reader.value("pods", int),
        terminated=reader.value("terminated", int),
        start_time=reader.time("startTime", optional=True),
        end_time=reader.time("endTime", optional=True),
    )


class _Reader:
    """Typed field access that reports the field's path on any problem."""

    def __init__(self, document: dict[str, Any], path: str) -> None:
        self.document = document
        self.path = path

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def value(self, key: str, kind: type[Any]) -> Any:
        if key not in self.document:
            raise StateFileError(f"{self._where(key)}: missing")
        value = self.document[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise StateFileError(f"{self._where(key)}: must be a {kind.__name__}")
        return value

    def number(self, key: str, *, optional: bool = False) -> float | None:
        value = self.document.get(key)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise StateFileError(f"{self._where(key)}: must be a number")
        return float(value)

    def time(self, key: str, *, optional: bool = False) -> Any:
        value = self.document.get(key)
        if value in (None, "") and optional:
            return None
        if not isinstance(value, str):
            raise StateFileError(f"{self._where(key)}: must be an RFC 3339 timestamp")
        try:
            return parse_rfc3339(value)
        except ValueError as error:
            raise StateFileError(f"{self._where(key)}: {error}") from None

    def choice(self, key: str, kind: type[StrEnum]) -> Any:
        value = self.value(key, str)
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(member.value for member in kind)
            raise StateFileError(f"{self._where(key)}: must be one of {allowed}") from None


def begin_record(
    buckets: Sequence[PriorityBucket],
    *,
    start_time: float,
    start_monotonic: float,
    boot_id: str,
    mode: str,
) -> ShutdownRecord:
    """A fresh ``running`` record with one pending phase per bucket, ascending."""
    windows = phase_windows(buckets)
    return ShutdownRecord(
        start_time=start_time,
        boot_id=boot_id,
        start_monotonic=start_monotonic,
        budget_seconds=total_seconds(windows),
        mode=mode,
        status=ShutdownStatus.RUNNING,
        phases=tuple(
            PhaseRecord(
                priority=window.priority,
                budget_seconds=window.budget_seconds,
                deadline_offset_seconds=window.deadline_offset_seconds,
            )
            for window in windows
        ),
    )
