"""DefaultEvictor: which pods may be evicted at all (``filter``) and, with ``nodeFit``, which
have somewhere else to go (``preEvictionFilter``).

Follows upstream's ``defaultevictor.go``, ``constraints.go`` and ``validation.go``:

- ``filter``: the ``descheduler.alpha.kubernetes.io/evict`` annotation admits a pod at once
  (PDBs still apply); ``noEvictionPolicy: Mandatory`` rejects ``prefer-no-eviction`` pods;
  mirror, static and terminating pods never go; then the protections, in either their legacy
  boolean form or the ``podProtections`` form (never both), the priority threshold,
  ``labelSelector``, ``minReplicas`` (> 1 only) and ``minPodAge`` (from ``status.startTime``);
- ``preEvictionFilter``: with ``nodeFit``, some other Ready node (of the args' own
  ``nodeSelector``) must fit the pod (``nodefit.NodeFit``: schedulable, nodeSelector and
  required affinity, NoSchedule/NoExecute taints, required anti-affinity, room); then the
  ``namespaceLabelSelector``.

Where we differ on purpose: a node whose agent reports it shutting down, gated or stopped is
never a place to go (``NodeUsage.usable_as_destination``). Upstream resolves a
``priorityThreshold.name`` through the API; we read the snapshot's PriorityClasses, and an
unknown name fails the plugin's build as upstream's lookup error does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import Duration, setting
from agent.descheduler.core.errors import DeschedulerError
from agent.descheduler.core.framework.args import LabelSelector
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.core.rules.budgets import BudgetIndex
from agent.descheduler.core.rules.nodefit import NodeFit
from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.descheduler.model.keys import EVICT_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION
from agent.kubesemantics.labelselector import SelectorError, matches, parse_selector
from agent.kubesemantics.wellknown import DAEMON_SET_KIND, FAILED, SYSTEM_CRITICAL_PRIORITY

LOCAL_STORAGE = "PodsWithLocalStorage"
DAEMON_SET = "DaemonSetPods"
SYSTEM_CRITICAL = "SystemCriticalPods"
FAILED_BARE = "FailedBarePods"
PVC = "PodsWithPVC"
WITHOUT_PDB = "PodsWithoutPDB"
RESOURCE_CLAIMS = "PodsWithResourceClaims"
DEFAULT_PROTECTIONS = (LOCAL_STORAGE, SYSTEM_CRITICAL, FAILED_BARE, DAEMON_SET)
EXTRA_PROTECTIONS = (PVC, WITHOUT_PDB, RESOURCE_CLAIMS)


@dataclass(frozen=True)
class PriorityThreshold:
    name: str = setting("")
    value: int | None = setting(None)

    def validate(self) -> list[FieldError]:
        if self.name and self.value is not None:
            return [
                FieldError(
                    "", "priority threshold misconfigured, only one of name and value can be set"
                )
            ]
        return []


@dataclass(frozen=True)
class ProtectedStorageClass:
    name: str = setting("")


@dataclass(frozen=True)
class PodsWithPVCConfig:
    protected_storage_classes: tuple[ProtectedStorageClass, ...] = setting(factory=tuple)


@dataclass(frozen=True)
class PodProtectionsConfig:
    pods_with_pvc: PodsWithPVCConfig | None = setting(None, key="PodsWithPVC")


@dataclass(frozen=True)
class PodProtections:
    extra_enabled: tuple[str, ...] = setting(factory=tuple)
    default_disabled: tuple[str, ...] = setting(factory=tuple)
    config: PodProtectionsConfig | None = setting(None)

    @property
    def used(self) -> bool:
        return bool(self.extra_enabled or self.default_disabled)

    def validate(self) -> list[FieldError]:
        errors = [
            FieldError(
                f"extraEnabled[{i}]",
                f"invalid pod protection {name!r} (valid: {', '.join(EXTRA_PROTECTIONS)})",
            )
            for i, name in enumerate(self.extra_enabled)
            if name not in EXTRA_PROTECTIONS
        ]
        errors += [
            FieldError(
                f"defaultDisabled[{i}]",
                f"invalid pod protection {name!r} (valid: {', '.join(DEFAULT_PROTECTIONS)})",
            )
            for i, name in enumerate(self.default_disabled)
            if name not in DEFAULT_PROTECTIONS
        ]
        for key, names in (
            ("defaultDisabled", self.default_disabled),
            ("extraEnabled", self.extra_enabled),
        ):
            if len(set(names)) != len(names):
                errors.append(FieldError(key, "contains duplicate entries"))
        pvc = self.config.pods_with_pvc if self.config else None
        if PVC in self.extra_enabled and pvc is not None:
            errors += [
                FieldError(
                    f"config.PodsWithPVC.protectedStorageClasses[{i}].name", "cannot be empty"
                )
                for i, storage_class in enumerate(pvc.protected_storage_classes)
                if not storage_class.name
            ]
        return errors


@dataclass(frozen=True)
class DefaultEvictorArgs:
    node_selector: str = setting("")
    label_selector: LabelSelector | None = setting(None)
    namespace_label_selector: LabelSelector | None = setting(None)
    priority_threshold: PriorityThreshold | None = setting(None)
    node_fit: bool = setting(False)
    min_replicas: int = setting(0, minimum=0)
    min_pod_age: Duration | None = setting(None)
    no_eviction_policy: Literal["", "Preferred", "Mandatory"] = setting("")
    pod_protections: PodProtections = setting(factory=PodProtections)
    evict_local_storage_pods: bool = setting(False)
    evict_daemon_set_pods: bool = setting(False)
    evict_system_critical_pods: bool = setting(False)
    ignore_pvc_pods: bool = setting(False)
    ignore_pods_without_pdb: bool = setting(False, key="ignorePodsWithoutPDB")
    evict_failed_bare_pods: bool = setting(False)

    @property
    def legacy_used(self) -> bool:
        return any(
            (
                self.evict_local_storage_pods,
                self.evict_daemon_set_pods,
                self.evict_system_critical_pods,
                self.ignore_pvc_pods,
                self.ignore_pods_without_pdb,
                self.evict_failed_bare_pods,
            )
        )

    def validate(self) -> list[FieldError]:
        errors: list[FieldError] = []
        if self.legacy_used and self.pod_protections.used:
            errors.append(
                FieldError(
                    "podProtections",
                    "cannot be used alongside the deprecated evictLocalStoragePods, "
                    "evictDaemonSetPods, evictSystemCriticalPods, ignorePvcPods, "
                    "ignorePodsWithoutPDB or evictFailedBarePods",
                )
            )
        if self.node_selector:
            try:
                parse_selector(self.node_selector)
            except SelectorError as error:
                errors.append(FieldError("nodeSelector", str(error)))
        return errors

    def protections(self) -> frozenset[str]:
        """``getEffectivePodProtections``: the legacy booleans unless the new form is used."""
        if self.pod_protections.used:
            kept = [
                p for p in DEFAULT_PROTECTIONS if p not in self.pod_protections.default_disabled
            ]
            return frozenset((*kept, *self.pod_protections.extra_enabled))
        legacy = {
            LOCAL_STORAGE: not self.evict_local_storage_pods,
            DAEMON_SET: not self.evict_daemon_set_pods,
            SYSTEM_CRITICAL: not self.evict_system_critical_pods,
            FAILED_BARE: not self.evict_failed_bare_pods,
            PVC: self.ignore_pvc_pods,
            WITHOUT_PDB: self.ignore_pods_without_pdb,
        }
        return frozenset(name for name, on in legacy.items() if on)


class DefaultEvictor:
    name = "DefaultEvictor"

    def __init__(self, args: DefaultEvictorArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.protections = args.protections()
        self.threshold = self._threshold(args.priority_threshold)
        self.selector = (
            args.label_selector.compiled()
            if args.label_selector and not args.label_selector.empty
            else None
        )
        self.namespace_selector = (
            args.namespace_label_selector.compiled()
            if args.namespace_label_selector and not args.namespace_label_selector.empty
            else None
        )
        self.fit_selector = parse_selector(args.node_selector)
        self._owner_pods: Counter[str] | None = None
        self._verdicts: dict[str, bool] = {}
        self.node_fit = NodeFit(handle.snapshot)
        self._budgets = BudgetIndex(handle.snapshot)

    def _threshold(self, threshold: PriorityThreshold | None) -> int | None:
        """The priority bar, or ``None`` when only the system-critical check applies."""
        if threshold is None:
            return None
        if threshold.value is not None:
            return threshold.value
        if threshold.name:
            classes = self.handle.snapshot.priority_classes
            if threshold.name not in classes:
                raise DeschedulerError(f"priority class {threshold.name!r} not found")
            return classes[threshold.name]
        return None

    # --- filter ------------------------------------------------------------------------

    def filter(self, pod: PodInfo) -> bool:
        # Every input of the rules is fixed for the cycle, and several plugins ask about the
        # same pods, so each pod is judged once.
        verdict = self._verdicts.get(pod.uid)
        if verdict is None:
            verdict = self._verdicts[pod.uid] = not self.filter_reasons(pod)
        return verdict

    def filter_reasons(self, pod: PodInfo) -> list[str]:
        """Why ``filter`` rejects the pod (every reason, as upstream aggregates them), in
        the order of upstream's constraints and with their messages."""
        if EVICT_ANNOTATION in pod.annotations:
            return []
        if self.args.no_eviction_policy == "Mandatory" and (
            PREFER_NO_EVICTION_ANNOTATION in pod.annotations
        ):
            return ["pod has the prefer-no-eviction annotation and the policy is Mandatory"]
        reasons: list[str] = []
        if pod.mirror:
            reasons.append("pod is a mirror pod")
        if pod.static:
            reasons.append("pod is a static pod")
        if pod.deleting:
            reasons.append("pod is terminating")
        self._protection_reasons(pod, reasons)
        if self.selector is not None and not matches(self.selector, pod.labels):
            reasons.append("pod labels do not match the labelSelector")
        if (reason := self._min_replicas_reason(pod)) is not None:
            reasons.append(reason)
        if self.args.min_pod_age is not None and (
            pod.start_time is None
            or self.handle.snapshot.now - pod.start_time < self.args.min_pod_age
        ):
            reasons.append("pod is not older than minPodAge")
        return reasons

    def _protection_reasons(self, pod: PodInfo, reasons: list[str]) -> None:
        """The pod protections' refusals (``podProtections``, or the legacy booleans), added
        to ``reasons``."""
        protections = self.protections
        if SYSTEM_CRITICAL in protections:
            if pod.priority is not None and pod.priority >= SYSTEM_CRITICAL_PRIORITY:
                reasons.append("pod has system critical priority")
            if (
                self.threshold is not None
                and pod.priority is not None
                and pod.priority >= self.threshold
            ):
                reasons.append("pod has higher priority than the priority threshold")
        if not pod.owners and (FAILED_BARE in protections or pod.phase != FAILED):
            reasons.append("pod does not have any ownerRefs")
        if LOCAL_STORAGE in protections and pod.local_storage:
            reasons.append("pod has local storage")
        if DAEMON_SET in protections and any(o.kind == DAEMON_SET_KIND for o in pod.owners):
            reasons.append("daemonset pods are protected")
        if PVC in protections and (reason := self._pvc_reason(pod)):
            reasons.append(reason)
        if WITHOUT_PDB in protections and not self._budgets.budgets_for(pod):
            reasons.append("pod does not have a PodDisruptionBudget")
        if RESOURCE_CLAIMS in protections and pod.extra.get("resourceClaims"):
            reasons.append("pod has ResourceClaims")

    def _pvc_reason(self, pod: PodInfo) -> str | None:
        if not pod.pvc_claims:
            return None
        config = self.args.pod_protections.config
        pvc = config.pods_with_pvc if config else None
        protected = {c.name for c in pvc.protected_storage_classes} if pvc else set()
        if not protected:
            return "pod with PVC is protected"
        for claim_name in pod.pvc_claims:
            claim = self.handle.snapshot.claims.get(f"{pod.namespace}/{claim_name}")
            if claim is None or not claim.storage_class:
                return f"cannot resolve the storage class of claim {claim_name}"
            if claim.storage_class in protected:
                return f"pod using protected storage class {claim.storage_class!r}"
        return None

    def _min_replicas_reason(self, pod: PodInfo) -> str | None:
        if self.args.min_replicas <= 1 or len(pod.owners) != 1:
            return None  # upstream skips bare pods and pods with several owners
        if self._owner_pods is None:
            self._owner_pods = Counter(
                owner.uid
                for pods in self.handle.snapshot.pods_by_node.values()
                for each in pods
                for owner in each.owners
            )
        replicas = self._owner_pods[pod.owners[0].uid]
        if replicas < self.args.min_replicas:
            return f"owner has {replicas} replicas, fewer than minReplicas {self.args.min_replicas}"
        return None

    # --- preEvictionFilter ---------------------------------------------------------------

    def pre_eviction_filter(self, pod: PodInfo) -> bool:
        if self.args.node_fit and not self.fits_another_node(pod):
            return False
        if self.namespace_selector is None:
            return True
        labels = self.handle.snapshot.namespaces.get(pod.namespace)
        return labels is not None and matches(self.namespace_selector, labels)

    def fits_another_node(self, pod: PodInfo) -> bool:
        """``PodFitsAnyOtherNode`` over the Ready nodes of the args' nodeSelector."""
        snapshot = self.handle.snapshot
        for node in sorted(snapshot.nodes.values(), key=lambda n: n.name):
            if node.name == pod.node_name or not node.ready:
                continue
            if not matches(self.fit_selector, node.labels):
                continue
            if self.fit_reason(pod, node) is None:
                return True
        return False

    def fit_reason(self, pod: PodInfo, node: NodeInfo) -> str | None:
        """``NodeFit``: why the pod does not fit the node, or ``None`` when it does."""
        return self.node_fit.reason(pod, node)
