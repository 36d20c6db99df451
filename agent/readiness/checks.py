"""The three checks of the readiness gate, as one pure function from snapshots to a verdict.

1. Every critical DaemonSet that should run here has a live pod here, matched through the
   pod's controller ownerReference UID (names can be reused, UIDs cannot).
2. Every critical pod here is Ready, by its ``Ready`` condition. Critical pods are those in
   the configured namespaces that carry the critical label *or* are controlled by a critical
   DaemonSet, so a DaemonSet labelled only on its own metadata still has its pod checked.
3. Every CSI driver named by a critical pod's ``<prefix><anything>=<driver>`` annotation is
   listed in ``CSINode/<node>.spec.drivers``; no CSINode means no drivers.

Which pods count: a pod being deleted is on its way out and is ignored (its replacement is
what we wait for); a ``Succeeded`` pod has done its job and is ignored. A ``Failed`` pod of a
DaemonSet is ignored too, because the DaemonSet controller replaces it and check 1 waits for
the replacement; a ``Failed`` bare pod is not Ready and holds the gate.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.kube.resources import object_key
from agent.kubesemantics.pods import being_deleted, controller_uid, is_finished
from agent.kubesemantics.wellknown import FAILED, PENDING, POD_SCHEDULED, READY, SUCCEEDED
from agent.readiness.placement import place
from agent.readiness.presets import CRITICAL_LABEL_VALUE, GateKeys

_MESSAGE_LIMIT = 160


@dataclass(frozen=True)
class DaemonSetCheck:
    name: str
    required: bool
    scheduled: bool
    """A live pod of it is on this node."""
    pod: str = ""
    reason: str = ""
    """Why it is not required (empty when required)."""
    intolerant: bool = False
    waiting_for_taints: tuple[str, ...] = ()

    @property
    def missing(self) -> bool:
        return self.required and not self.scheduled


@dataclass(frozen=True)
class PodCheck:
    name: str
    ready: bool
    detail: str = ""
    """What the pod is waiting for (empty when Ready)."""


@dataclass(frozen=True)
class DriverCheck:
    driver: str
    registered: bool
    pods: tuple[str, ...]
    """The critical pods that wait for it."""


@dataclass(frozen=True)
class Assessment:
    daemon_sets: tuple[DaemonSetCheck, ...]
    pods: tuple[PodCheck, ...]
    drivers: tuple[DriverCheck, ...]
    csinode_found: bool

    @property
    def unscheduled(self) -> tuple[DaemonSetCheck, ...]:
        return tuple(check for check in self.daemon_sets if check.missing)

    @property
    def intolerant(self) -> tuple[DaemonSetCheck, ...]:
        return tuple(check for check in self.daemon_sets if check.intolerant)

    @property
    def unready(self) -> tuple[PodCheck, ...]:
        return tuple(check for check in self.pods if not check.ready)

    @property
    def missing_drivers(self) -> tuple[DriverCheck, ...]:
        return tuple(check for check in self.drivers if not check.registered)

    @property
    def ready(self) -> bool:
        return not (self.unscheduled or self.unready or self.missing_drivers)

    @property
    def empty(self) -> bool:
        """Nothing on this node is critical: the gate has nothing to wait for."""
        return not (any(c.required for c in self.daemon_sets) or self.pods)


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _live(pod: Mapping[str, Any]) -> bool:
    return not being_deleted(pod) and not is_finished(pod)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def pod_readiness(pod: Mapping[str, Any]) -> PodCheck:
    """Ready by the ``Ready`` condition; otherwise say what the pod shows instead."""
    name = object_key(pod)
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == READY), None)
    if ready is not None and ready.get("status") == "True":
        return PodCheck(name, ready=True)
    phase = _phase(pod) or PENDING
    if phase == FAILED:
        return PodCheck(name, ready=False, detail=_shorten(f"Failed: {status.get('reason', '')}"))
    if ready is None:
        scheduled = next((c for c in conditions if c.get("type") == POD_SCHEDULED), None)
        if scheduled is not None and scheduled.get("status") != "True":
            return PodCheck(name, ready=False, detail=_shorten(f"{phase}: not scheduled"))
        return PodCheck(name, ready=False, detail=f"{phase}: no Ready condition yet")
    why = ready.get("reason") or f"Ready={ready.get('status')}"
    message = ready.get("message")
    return PodCheck(name, ready=False, detail=_shorten(f"{why}: {message}" if message else why))


def _critical_pods(
    pods: Iterable[Mapping[str, Any]],
    *,
    keys: GateKeys,
    namespaces: Collection[str],
    daemon_set_uids: Collection[str],
) -> list[Mapping[str, Any]]:
    chosen = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        if metadata.get("namespace") not in namespaces or being_deleted(pod):
            continue
        owner = controller_uid(pod)
        labelled = (metadata.get("labels") or {}).get(keys.label) == CRITICAL_LABEL_VALUE
        owned = owner is not None and owner in daemon_set_uids
        if not (labelled or owned) or _phase(pod) == SUCCEEDED:
            continue
        if _phase(pod) == FAILED and owned:
            continue
        chosen.append(pod)
    return sorted(chosen, key=object_key)


def _driver_checks(
    pods: Iterable[Mapping[str, Any]], prefix: str, csinode: Mapping[str, Any] | None
) -> tuple[DriverCheck, ...]:
    wanted: dict[str, list[str]] = {}
    for pod in pods:
        for key, value in ((pod.get("metadata") or {}).get("annotations") or {}).items():
            if key.startswith(prefix) and value:
                wanted.setdefault(str(value), []).append(object_key(pod))
    registered = {
        str(driver.get("name"))
        for driver in ((csinode or {}).get("spec") or {}).get("drivers") or []
    }
    return tuple(
        DriverCheck(driver, driver in registered, tuple(sorted(set(names))))
        for driver, names in sorted(wanted.items())
    )


def assess(
    *,
    node: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    daemon_sets: Iterable[Mapping[str, Any]],
    csinode: Mapping[str, Any] | None,
    keys: GateKeys,
    namespaces: Collection[str],
    startup_taints: Collection[str] = (),
) -> Assessment:
    """Run the three checks on one consistent set of snapshots."""
    pods = list(pods)
    critical_sets = sorted(
        (
            ds
            for ds in daemon_sets
            if (ds.get("metadata") or {}).get("namespace") in namespaces
            and ((ds.get("metadata") or {}).get("labels") or {}).get(keys.label)
            == CRITICAL_LABEL_VALUE
        ),
        key=object_key,
    )
    live_by_owner: dict[str, Mapping[str, Any]] = {}
    for pod in pods:
        owner = controller_uid(pod)
        if owner is not None and _live(pod):
            live_by_owner.setdefault(owner, pod)

    ds_checks = []
    for ds in critical_sets:
        placement = place(ds, node, gate_key=keys.taint, startup_taints=startup_taints)
        uid = str((ds.get("metadata") or {}).get("uid") or "")
        owned = live_by_owner.get(uid) if uid else None
        ds_checks.append(
            DaemonSetCheck(
                name=object_key(ds),
                required=placement.required,
                scheduled=owned is not None,
                pod=object_key(owned) if owned is not None else "",
                reason=placement.reason,
                intolerant=placement.intolerant,
                waiting_for_taints=placement.waiting_for_taints,
            )
        )
    uids = {str((ds.get("metadata") or {}).get("uid") or "") for ds in critical_sets} - {""}
    critical = _critical_pods(pods, keys=keys, namespaces=namespaces, daemon_set_uids=uids)
    return Assessment(
        daemon_sets=tuple(ds_checks),
        pods=tuple(pod_readiness(pod) for pod in critical),
        drivers=_driver_checks(critical, keys.csi_annotation_prefix, csinode),
        csinode_found=csinode is not None,
    )
