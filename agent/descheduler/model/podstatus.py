"""The parts of a pod's ``status`` the pod-state plugins read, kept small and shared.

RemovePodsHavingTooManyRestarts, PodLifeTime and RemoveFailedPods read restart counts,
container waiting/terminated reasons and exit codes, ``status.reason`` and the pod
conditions. Everything else of the status (messages, start times, image IDs) is dropped.

Kept in ``PodInfo.extra[STATUS]`` so the model grows no field, and cheap for the common pod:

- a container that is running (or has no state) and never restarted says nothing any plugin
  reads (no restarts, no reason, no exit code), so it is not kept at all; only the others
  are, in no particular order (the plugins only ask "any" and "sum");
- a condition's ``lastTransitionTime`` is kept as seconds after the pod's
  ``creationTimestamp``, so the conditions of pods created, scheduled and made ready in the
  same rhythm are equal, and the cache stores them once (``sharing``, ``podlist``);
- a pod with no status at all keeps no entry.

Pure data, no I/O, no clocks: ages are measured by the plugins against ``ClusterSnapshot.now``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from agent.descheduler.model.cluster import PodInfo

STATUS = "status"
"""The key of ``PodStatusInfo`` in ``PodInfo.extra``."""


@dataclass(frozen=True, slots=True)
class ContainerStatusInfo:
    """One container status that says something: it restarted, waits or has terminated."""

    restarts: int = 0
    waiting: str = ""
    """``state.waiting.reason`` (``""`` when not waiting, or waiting without a reason)."""
    terminated: str = ""
    """``state.terminated.reason`` (``""`` when not terminated, or without a reason)."""
    exit_code: int | None = None
    """``state.terminated.exitCode``; ``None`` exactly when the container is not terminated."""

    @property
    def plain(self) -> bool:
        """Running (or no state) and never restarted: nothing a plugin reads."""
        return self.restarts == 0 and not self.waiting and self.exit_code is None


@dataclass(frozen=True, slots=True)
class PodConditionInfo:
    type: str
    status: str
    reason: str
    since_creation: float | None
    """``lastTransitionTime`` minus ``metadata.creationTimestamp``, in seconds (both are whole
    seconds on the wire, so the difference is exact); ``None`` without a transition time."""


@dataclass(frozen=True, slots=True)
class PodStatusInfo:
    reason: str = ""
    """``status.reason`` (``NodeLost``, ``Shutdown``, ``Evicted``, ...)."""
    containers: tuple[ContainerStatusInfo, ...] = ()
    init_containers: tuple[ContainerStatusInfo, ...] = ()
    ephemeral_containers: tuple[ContainerStatusInfo, ...] = ()
    """The container statuses of each kind that are not ``plain``."""
    conditions: tuple[PodConditionInfo, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.reason
            or self.containers
            or self.init_containers
            or self.ephemeral_containers
            or self.conditions
        )

    def restarts(self, *, init: bool) -> int:
        """Upstream's ``getPodTotalRestarts``: containers, plus init containers if asked."""
        total = sum(c.restarts for c in self.containers)
        if init:
            total += sum(c.restarts for c in self.init_containers)
        return total

    def statuses(self, *, init: bool, ephemeral: bool = False) -> Iterator[ContainerStatusInfo]:
        """The kept container statuses of the kinds asked for (regular ones always)."""
        yield from self.containers
        if init:
            yield from self.init_containers
        if ephemeral:
            yield from self.ephemeral_containers


PLAIN = PodStatusInfo()
"""The status of a pod that kept no entry."""


def status_of(pod: PodInfo) -> PodStatusInfo:
    found = pod.extra.get(STATUS)
    return found if isinstance(found, PodStatusInfo) else PLAIN


def transition_time(pod: PodInfo, condition: PodConditionInfo) -> float | None:
    """The condition's ``lastTransitionTime`` in Unix seconds, or ``None`` without one."""
    if condition.since_creation is None:
        return None
    return pod.creation_timestamp + condition.since_creation


def container_status(
    restarts: int, waiting: str | None, terminated: str | None, exit_code: int | None
) -> ContainerStatusInfo | None:
    """The kept form of one container status; ``None`` when it is ``plain``.

    ``waiting``/``terminated`` are the state's reasons (``None`` when the state is absent);
    ``exit_code`` is only read when the container is terminated (absent counts as 0, the
    API's default).
    """
    info = ContainerStatusInfo(
        restarts=restarts,
        waiting=waiting or "",
        terminated=terminated or "",
        exit_code=None if terminated is None else (exit_code or 0),
    )
    return None if info.plain else info


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
"""Upstream's exit codes and restart counts are ``int32``."""


def exited_with(pod: PodInfo, codes: Collection[int], *, init: bool) -> bool:
    """Whether a terminated container's exit code is one of ``codes`` (init containers too
    with ``init``); with no codes every pod passes, as an unset ``exitCodes`` arg filters
    nothing."""
    if not codes:
        return True
    return any(each.exit_code in codes for each in status_of(pod).statuses(init=init))


def exit_codes_reason(codes: tuple[int, ...]) -> str | None:
    """An ``exitCodes`` arg's problem, if any: upstream decodes them as ``int32``, so anything
    wider fails there."""
    bad = [code for code in codes if not INT32_MIN <= code <= INT32_MAX]
    return f"{', '.join(map(str, bad))}: must be 32-bit integers" if bad else None
