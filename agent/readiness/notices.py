"""What the gate tells people: Event reasons and messages, and how often it may say them.

Messages name what is missing, so ``kubectl describe node`` answers "why is this node still
tainted?". The throttle is per reason, not per message: while a node boots, the list of
missing pods changes with every pod that turns Ready, and a per-message limit would post
one Event per change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.readiness.checks import Assessment

UNSCHEDULED = "UnscheduledNodeCriticalDaemonSets"
UNREADY_PODS = "UnreadyNodeCriticalPods"
UNREADY_DRIVERS = "UnreadyRequiredCSIDrivers"
INTOLERANT = "IntolerantNodeCriticalDaemonSets"
READY = "NodeCriticalComponentsReady"
NOT_READY = "NodeCriticalComponentsNotReady"

_LIST_LIMIT = 10


@dataclass(frozen=True)
class Notice:
    reason: str
    message: str
    warning: bool = True


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_LIST_LIMIT])
    rest = len(names) - _LIST_LIMIT
    return f"{shown} and {rest} more" if rest > 0 else shown


def warnings_for(assessment: Assessment, taint_key: str) -> list[Notice]:
    """One Warning per failing check, plus one for DaemonSets that cannot pass the gate."""
    notices = []
    if unscheduled := assessment.unscheduled:
        notices.append(
            Notice(
                UNSCHEDULED,
                "Critical DaemonSets without a pod on this node: "
                + _names([check.name for check in unscheduled]),
            )
        )
    if unready := assessment.unready:
        notices.append(
            Notice(
                UNREADY_PODS,
                "Critical pods not Ready: "
                + _names([f"{check.name} ({check.detail})" for check in unready]),
            )
        )
    if drivers := assessment.missing_drivers:
        notices.append(
            Notice(
                UNREADY_DRIVERS,
                "CSI drivers not registered in CSINode: "
                + _names([f"{check.driver} (for {', '.join(check.pods)})" for check in drivers]),
            )
        )
    if intolerant := assessment.intolerant:
        notices.append(
            Notice(
                INTOLERANT,
                f"Critical DaemonSets that do not tolerate {taint_key} and so cannot get a "
                "pod here until it is lifted (they do not hold the gate; add a toleration): "
                + _names([check.name for check in intolerant]),
            )
        )
    return notices


def lifted(taint_key: str, waited: float | None) -> Notice:
    after = f" after {waited:.1f}s" if waited is not None else ""
    return Notice(
        READY,
        f"All node-critical components are ready; removed taint {taint_key}{after}",
        warning=False,
    )


def readded(taint_key: str, assessment: Assessment, hold_time: float) -> Notice:
    missing = [check.name for check in assessment.unscheduled]
    missing += [check.name for check in assessment.unready]
    missing += [check.driver for check in assessment.missing_drivers]
    return Notice(
        NOT_READY,
        f"Node-critical components not ready for over {hold_time:g}s; added taint "
        f"{taint_key}: {_names(missing)}",
    )


@dataclass
class Throttle:
    """At most one notice per reason per ``interval`` seconds (monotonic time)."""

    interval: float
    _last: dict[str, float] = field(default_factory=dict)

    def allow(self, reason: str, now: float) -> bool:
        last = self._last.get(reason)
        if last is not None and now - last < self.interval:
            return False
        self._last[reason] = now
        return True
