"""The shapes and rules the API server enforces on what the projection keeps as sent.

Affinity, tolerations, taints, topology spread constraints and label selectors are small and
rare enough to keep as the API sent them (``PodInfo.affinity`` is a dict), and the matching
rules in ``agent.kube`` read them as dicts. The API server never stores one of the wrong
shape, but a snapshot file can hold anything: a ``true`` where an affinity belongs would
reach a rule's ``.get`` in the middle of a cycle. So each is checked once, where it enters,
against the types the API server validates (only the fields some rule reads; others pass),
and a misfit is a ``ProjectionError`` at its path: exit 2 offline, a skipped object live.

Beyond the types, the rules of the API server's validation that decide what a rule would
compute: selector operators (``In``/``NotIn`` with values, ``Exists``/``DoesNotExist``
without; ``Gt``/``Lt`` with one integer, node selectors only), label keys and values, taint
effects, toleration operators, ``maxSkew`` and ``minDomains`` of at least 1, weights of
1-100, a budget's ``minAvailable`` or ``maxUnavailable`` (not both), and every integer within
the int32 or int64 its API field is. An operator that does not exist would otherwise make a
budget protect nothing, and a ``maxSkew`` of 10^400 reach float arithmetic in placement.
The live caches run the same checks, but only on parts they have not seen before (the pod
list projector memoizes each part by its bytes), so a list costs what it cost.

``object_meta_problems`` checks what the API server checks of every object's metadata (its
name, namespace and labels); the offline plan runs it on each item of a snapshot file, where
nothing else has: the live caches read objects the API server has already validated.

Nesting is bounded too (``MAX_NESTING``), unknown fields included, before anything walks a
value recursively.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

import msgspec

from agent.config.schema import INT64_MAX, INT64_MIN
from agent.kubesemantics.labelselector import OPERATORS
from agent.kubesemantics.names import (
    dns_label_problem,
    dns_subdomain_problem,
    label_value_problem,
    qualified_name_problem,
)
from agent.kubesemantics.wellknown import (
    DO_NOT_SCHEDULE,
    INCLUSION_POLICIES,
    NO_EXECUTE,
    TAINT_EFFECTS,
    WHEN_UNSATISFIABLE,
)

INT32_MAX = 2**31 - 1
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=INT32_MAX)]
Int64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
Count32 = Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)]
"""An int32 the API server requires to be >= 0 (a budget's counts)."""
Positive32 = Annotated[int, msgspec.Meta(ge=1, le=INT32_MAX)]
"""An int32 the API server requires to be >= 1 (``maxSkew``, ``minDomains``)."""
Weight = Annotated[int, msgspec.Meta(ge=1, le=100)]

NODE_SELECTOR_OPERATORS = OPERATORS | {"Gt", "Lt"}
TOLERATION_OPERATORS = frozenset({"Exists", "Equal", "", "Lt", "Gt"})
"""``Lt`` and ``Gt`` (an integer value) are newer releases' numeric comparisons."""
NODE_NAME_FIELD = "metadata.name"
"""The one field a node selector's ``matchFields`` may name."""
_INTEGER = re.compile(r"^[-+]?[0-9]+\Z")
_PERCENT = re.compile(r"^[0-9]+%\Z")


def _one_of(what: str, value: str, allowed: Iterable[str]) -> None:
    if value not in allowed:
        choices = ", ".join(repr(each) for each in sorted(allowed) if each)
        raise ValueError(f"{what} {value!r} is not one of {choices}")


def _label_key(key: str, what: str = "key") -> None:
    if problem := qualified_name_problem(key):
        raise ValueError(f"{what} {key!r}: {problem}")


def _label_values(values: Iterable[str]) -> None:
    for value in values:
        if problem := label_value_problem(value):
            raise ValueError(f"value {value!r}: {problem}")


def _label_map(labels: Mapping[str, str] | None) -> None:
    for key, value in (labels or {}).items():
        _label_key(key, "label key")
        if problem := label_value_problem(value):
            raise ValueError(f"label {key}={value!r}: {problem}")


def _requirement(key: str, operator: str, values: list[str] | None, operators: Any) -> None:
    """``ValidateLabelSelectorRequirement`` / ``validateNodeSelectorRequirement``."""
    _label_key(key)
    _one_of("operator", operator, operators)
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"operator {operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"operator {operator} takes no values")
    if operator in ("Gt", "Lt"):
        if len(values or ()) != 1:
            raise ValueError(f"operator {operator} needs exactly one value")
        number = (values or [""])[0]
        if not _INTEGER.match(number) or not INT64_MIN <= int(number) <= INT64_MAX:
            raise ValueError(f"operator {operator} needs an int64, not {number!r}")


class _Shape(msgspec.Struct, rename="camel"):
    """camelCase on the wire; unknown fields pass (newer API fields are no error)."""


class LabelSelectorRequirement(_Shape):
    key: str
    operator: str
    values: list[str] | None = None

    def __post_init__(self) -> None:
        _requirement(self.key, self.operator, self.values, OPERATORS)


class LabelSelector(_Shape):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    def __post_init__(self) -> None:
        _label_map(self.match_labels)


class NodeSelectorRequirement(_Shape):
    key: str
    operator: str
    values: list[str] | None = None

    def __post_init__(self) -> None:
        _requirement(self.key, self.operator, self.values, NODE_SELECTOR_OPERATORS)


class NodeFieldSelectorRequirement(_Shape):
    key: str
    operator: str
    values: list[str] | None = None

    def __post_init__(self) -> None:
        if self.key != NODE_NAME_FIELD:
            raise ValueError(f"key {self.key!r}: the only field is {NODE_NAME_FIELD}")
        _one_of("operator", self.operator, ("In", "NotIn"))
        if len(self.values or ()) != 1:
            raise ValueError(f"operator {self.operator} needs exactly one value here")


class NodeSelectorTerm(_Shape):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeFieldSelectorRequirement] | None = None


class NodeSelector(_Shape):
    node_selector_terms: list[NodeSelectorTerm]

    def __post_init__(self) -> None:
        if not self.node_selector_terms:
            raise ValueError("nodeSelectorTerms must have at least one term")


class PreferredSchedulingTerm(_Shape):
    weight: Weight
    preference: NodeSelectorTerm


class NodeAffinity(_Shape):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )


class PodAffinityTerm(_Shape):
    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None

    def __post_init__(self) -> None:
        _label_key(self.topology_key, "topologyKey")
        for key in (*(self.match_label_keys or ()), *(self.mismatch_label_keys or ())):
            _label_key(key, "label key")


class WeightedPodAffinityTerm(_Shape):
    weight: Weight
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Shape):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = (
        None
    )


class Affinity(_Shape):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(_Shape):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None

    def __post_init__(self) -> None:
        """``validateTolerations``."""
        operator = self.operator or ""
        _one_of("operator", operator, TOLERATION_OPERATORS)
        if self.key:
            _label_key(self.key)
        elif operator != "Exists":
            raise ValueError("operator must be Exists when the key is empty")
        if operator == "Exists" and self.value:
            raise ValueError("value must be empty when the operator is Exists")
        if operator in ("Lt", "Gt") and not _INTEGER.match(self.value or ""):
            raise ValueError(f"operator {operator} needs an integer value")
        if operator in ("Equal", ""):
            _label_values((self.value or "",))
        _one_of("effect", self.effect or "", TAINT_EFFECTS | {""})
        if self.toleration_seconds is not None and self.effect != NO_EXECUTE:
            raise ValueError("tolerationSeconds needs the effect NoExecute")


class Taint(_Shape):
    key: str
    effect: str
    value: str | None = None
    time_added: str | None = None

    def __post_init__(self) -> None:
        _label_key(self.key)
        _label_values((self.value or "",))
        _one_of("effect", self.effect, TAINT_EFFECTS)


class TopologySpreadConstraint(_Shape):
    max_skew: Positive32
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: Positive32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None

    def __post_init__(self) -> None:
        _label_key(self.topology_key, "topologyKey")
        _one_of("whenUnsatisfiable", self.when_unsatisfiable, WHEN_UNSATISFIABLE)
        if self.min_domains is not None and self.when_unsatisfiable != DO_NOT_SCHEDULE:
            raise ValueError("minDomains needs whenUnsatisfiable DoNotSchedule")
        for name, policy in (
            ("nodeAffinityPolicy", self.node_affinity_policy),
            ("nodeTaintsPolicy", self.node_taints_policy),
        ):
            if policy is not None:
                _one_of(name, policy, INCLUSION_POLICIES)
        for key in self.match_label_keys or ():
            _label_key(key, "label key")


def _budget_amount(name: str, value: int | str | None) -> None:
    if isinstance(value, str) and (not _PERCENT.match(value) or int(value[:-1]) > 100):
        raise ValueError(f"{name} {value!r} is neither an integer nor a percentage 0-100%")


class DisruptionBudgetSpec(_Shape):
    selector: LabelSelector | None = None
    min_available: Count32 | str | None = None
    max_unavailable: Count32 | str | None = None

    def __post_init__(self) -> None:
        if self.min_available is not None and self.max_unavailable is not None:
            raise ValueError("minAvailable and maxUnavailable cannot both be set")
        _budget_amount("minAvailable", self.min_available)
        _budget_amount("maxUnavailable", self.max_unavailable)


class DisruptionBudgetStatus(_Shape):
    disruptions_allowed: Count32 | None = None
    current_healthy: Count32 | None = None
    desired_healthy: Count32 | None = None
    expected_pods: Count32 | None = None


AFFINITY: Any = Affinity | None
TOLERATIONS: Any = list[Toleration] | None
TAINTS: Any = list[Taint] | None
SPREAD: Any = list[TopologySpreadConstraint] | None
SELECTOR: Any = LabelSelector | None
BUDGET_SPEC: Any = DisruptionBudgetSpec | None
BUDGET_STATUS: Any = DisruptionBudgetStatus | None
STRING_MAP: Any = dict[str, str] | None
INT32: Any = Int32 | None
INT64: Any = Int64 | None


def int_problem(value: Any, low: int, high: int) -> str | None:
    """Why an integer field's ``value`` is not an integer within ``low..high``, or ``None``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"not an integer: {value!r:.60}"
    if not low <= value <= high:
        return f"{value:.3g} is outside {low}..{high}" if abs(value) < 10**300 else "out of range"
    return None


CLUSTER_SCOPED = frozenset({"Node", "Namespace", "PriorityClass", "NodeReport"})


def object_meta_problems(
    kind: str, name: Any, namespace: Any, labels: Any
) -> list[tuple[str, str]]:
    """``(path, reason)`` for what the API server would refuse in an object's metadata: a
    name that is not a DNS subdomain (a DNS label for a Namespace), a namespace that is not
    a DNS label, a label key or value of the wrong syntax."""
    problems: list[tuple[str, str]] = []
    if isinstance(name, str):
        check = dns_label_problem if kind == "Namespace" else dns_subdomain_problem
        if problem := check(name):
            problems.append(("metadata.name", f"{name!r:.80} {problem}"))
    namespaced = isinstance(namespace, str) and namespace and kind not in CLUSTER_SCOPED
    if namespaced and (problem := dns_label_problem(namespace)):
        problems.append(("metadata.namespace", f"{namespace!r:.80} {problem}"))
    if labels is not None:
        if not isinstance(labels, dict):
            problems.append(("metadata.labels", "not a map of strings"))
            return problems
        for key, value in labels.items():
            if not isinstance(key, str) or not isinstance(value, str):
                problems.append(("metadata.labels", "not a map of strings"))
            elif problem := qualified_name_problem(key):
                problems.append((f"metadata.labels.{key:.80}", f"key {problem}"))
            elif problem := label_value_problem(value):
                problems.append((f"metadata.labels.{key:.80}", f"{value!r:.80} {problem}"))
    return problems


MAX_NESTING = 32
"""Kubernetes' own sub-objects nest under ten levels; deeper is refused, unknown fields
included (they pass the shape, and are kept)."""


def _too_deep(value: Any) -> bool:
    pending = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        if depth > MAX_NESTING:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def misfit(value: Any, shape: Any) -> tuple[str, str] | None:
    """``(path within value, reason)`` when ``value`` is not of ``shape``, else ``None``."""
    if _too_deep(value):
        return "", f"nested deeper than {MAX_NESTING} levels"
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError as error:
        reason, _, where = str(error).partition(" - at `$")
        return where.rstrip("`"), reason
    except RecursionError:
        return "", "nested too deep"
    return None
