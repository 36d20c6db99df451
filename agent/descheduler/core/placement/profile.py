"""The scheduler profile placement predicts for: which score plugins, with which weights and
which NodeResourcesFit strategy.

By default it is kube-scheduler 1.28's default profile (``scoring``'s weights, LeastAllocated
on cpu and memory). A cluster that runs another one (bin packing with MostAllocated, which
HighNodeUtilization expects; a plugin switched off; other weights) gets the prediction of its
own scheduler when ``descheduler plan --scheduler-config`` is given its
``KubeSchedulerConfiguration``. ``parse_scheduler_config`` reads the profile that schedules
pods without a ``schedulerName`` (``default-scheduler``), merging it over the defaults as
kube-scheduler does (``mergePluginSet``: a disabled plugin, or ``*``, goes; an enabled one
replaces the default's entry, weight 1 when none is given), and refuses, naming each by its
path, what the prediction cannot model: score plugins other than the seven defaults,
RequestedToCapacityRatio, resources other than cpu and memory, args that change a score's
input (``addedAffinity``, listed default spread constraints). Pure: a dict in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent.config.errors import FieldError
from agent.descheduler.core.placement.scoring import (
    BALANCED_ALLOCATION,
    HARD_POD_AFFINITY_WEIGHT,
    IMAGE_LOCALITY,
    INTER_POD_AFFINITY,
    NODE_AFFINITY,
    RESOURCES_FIT,
    TAINT_TOLERATION,
    TOPOLOGY_SPREAD,
)

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER = "default-scheduler"

TAINTS = "TaintToleration"
NODE_AFFINITY_PLUGIN = "NodeAffinity"
FIT = "NodeResourcesFit"
BALANCED = "NodeResourcesBalancedAllocation"
SPREAD = "PodTopologySpread"
INTER_POD = "InterPodAffinity"
IMAGES = "ImageLocality"
DEFAULT_WEIGHTS: Mapping[str, int] = {
    TAINTS: TAINT_TOLERATION,
    NODE_AFFINITY_PLUGIN: NODE_AFFINITY,
    FIT: RESOURCES_FIT,
    SPREAD: TOPOLOGY_SPREAD,
    INTER_POD: INTER_POD_AFFINITY,
    BALANCED: BALANCED_ALLOCATION,
    IMAGES: IMAGE_LOCALITY,
}
"""1.28's default score plugins and weights (``getDefaultPlugins``)."""
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
RESOURCES = ("cpu", "memory")


@dataclass(frozen=True)
class SchedulerProfile:
    """What placement scores with; the default profile by default."""

    weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    """Score plugin -> weight; a plugin not here does not score."""
    fit_strategy: str = LEAST_ALLOCATED
    fit_weights: tuple[int, int] = (1, 1)
    """NodeResourcesFit's weights of cpu and memory (0: the resource is not scored)."""
    balanced_resources: tuple[bool, bool] = (True, True)
    """Whether BalancedAllocation reads cpu, memory."""
    hard_pod_affinity_weight: int = HARD_POD_AFFINITY_WEIGHT

    def weight(self, plugin: str) -> int:
        return self.weights.get(plugin, 0)


DEFAULT_PROFILE = SchedulerProfile()


def parse_scheduler_config(raw: Any) -> tuple[SchedulerProfile, list[FieldError]]:
    """The ``default-scheduler`` profile of a ``KubeSchedulerConfiguration``, and every
    problem found (the profile is the default one when there are any)."""
    errors: list[FieldError] = []
    if not isinstance(raw, Mapping):
        return DEFAULT_PROFILE, [FieldError("", "not a KubeSchedulerConfiguration object")]
    if raw.get("apiVersion") != API_VERSION or raw.get("kind") != KIND:
        errors.append(FieldError("apiVersion", f"must be {API_VERSION}, kind {KIND}"))
    profiles = raw.get("profiles") or [{}]
    if not isinstance(profiles, list):
        return DEFAULT_PROFILE, [*errors, FieldError("profiles", "must be a list")]
    chosen = [
        (index, profile)
        for index, profile in enumerate(profiles)
        if isinstance(profile, Mapping)
        and (profile.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER
    ]
    if not chosen:
        errors.append(FieldError("profiles", f"no profile for {DEFAULT_SCHEDULER}"))
        return DEFAULT_PROFILE, errors
    index, profile = chosen[0]
    here = f"profiles[{index}]"
    weights = _weights(profile.get("plugins"), f"{here}.plugins", errors)
    result = SchedulerProfile(weights=weights)
    args = _plugin_args(profile.get("pluginConfig"), f"{here}.pluginConfig", errors)
    result = _with_args(result, args, errors)
    return (DEFAULT_PROFILE if errors else result), errors


def _weights(plugins: Any, here: str, errors: list[FieldError]) -> dict[str, int]:
    weights = dict(DEFAULT_WEIGHTS)
    if plugins is None:
        return weights
    if not isinstance(plugins, Mapping):
        errors.append(FieldError(here, "must be an object"))
        return weights
    for point in ("multiPoint", "score"):
        plugin_set = plugins.get(point)
        if plugin_set is None:
            continue
        if not isinstance(plugin_set, Mapping):
            errors.append(FieldError(f"{here}.{point}", "must be an object"))
            continue
        _merge(weights, plugin_set, f"{here}.{point}", scores_only=point == "score", errors=errors)
    return weights


def _merge(
    weights: dict[str, int],
    plugin_set: Mapping[str, Any],
    here: str,
    *,
    scores_only: bool,
    errors: list[FieldError],
) -> None:
    """One extension point's ``disabled`` then ``enabled`` over ``weights``, as
    ``mergePluginSet`` does."""
    for position, entry in enumerate(plugin_set.get("disabled") or ()):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name == "*":
            weights.clear()
        elif isinstance(name, str):
            weights.pop(name, None)
        else:
            errors.append(FieldError(f"{here}.disabled[{position}]", "needs a name"))
    for position, entry in enumerate(plugin_set.get("enabled") or ()):
        path = f"{here}.enabled[{position}]"
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str):
            errors.append(FieldError(path, "needs a name"))
        elif name in DEFAULT_WEIGHTS:
            weight = entry.get("weight") or 1
            if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
                errors.append(FieldError(f"{path}.weight", "must be a non-negative integer"))
            else:
                weights[name] = weight
        elif scores_only:
            errors.append(FieldError(path, f"{name} is a score plugin the prediction cannot model"))
        # a multiPoint plugin of another kind leaves the scores alone


def _plugin_args(config: Any, here: str, errors: list[FieldError]) -> dict[str, tuple[str, Any]]:
    """Plugin name -> (its path, its args), for the plugins whose args move a score."""
    found: dict[str, tuple[str, Any]] = {}
    if config is None:
        return found
    if not isinstance(config, list):
        errors.append(FieldError(here, "must be a list"))
        return found
    for position, entry in enumerate(config):
        path = f"{here}[{position}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            errors.append(FieldError(path, "needs a name"))
            continue
        args = entry.get("args") or {}
        if not isinstance(args, Mapping):
            errors.append(FieldError(f"{path}.args", "must be an object"))
            continue
        found[entry["name"]] = (f"{path}.args", args)
    return found


def _with_args(
    profile: SchedulerProfile,
    args: Mapping[str, tuple[str, Any]],
    errors: list[FieldError],
) -> SchedulerProfile:
    changes: dict[str, Any] = {}
    if FIT in args:
        path, fit = args[FIT]
        strategy = fit.get("scoringStrategy") or {}
        kind = strategy.get("type", LEAST_ALLOCATED)
        if kind not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            errors.append(
                FieldError(f"{path}.scoringStrategy.type", f"{kind!r}: the prediction models "
                           f"{LEAST_ALLOCATED} and {MOST_ALLOCATED}")
            )  # fmt: skip
        changes["fit_strategy"] = kind
        if "resources" in strategy:
            named = _resources(strategy["resources"], f"{path}.scoringStrategy.resources", errors)
            changes["fit_weights"] = (named.get("cpu", 0), named.get("memory", 0))
    if BALANCED in args:
        path, balanced = args[BALANCED]
        if "resources" in balanced:
            named = _resources(balanced["resources"], f"{path}.resources", errors)
            changes["balanced_resources"] = ("cpu" in named, "memory" in named)
    if INTER_POD in args:
        path, inter_pod = args[INTER_POD]
        weight = inter_pod.get("hardPodAffinityWeight", HARD_POD_AFFINITY_WEIGHT)
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
            errors.append(FieldError(f"{path}.hardPodAffinityWeight", "must be an integer >= 0"))
        else:
            changes["hard_pod_affinity_weight"] = weight
    if SPREAD in args:
        path, spread = args[SPREAD]
        if spread.get("defaultingType", "System") != "System" or spread.get("defaultConstraints"):
            errors.append(
                FieldError(path, "listed default constraints: the prediction models System")
            )
    if NODE_AFFINITY_PLUGIN in args and args[NODE_AFFINITY_PLUGIN][1].get("addedAffinity"):
        path = args[NODE_AFFINITY_PLUGIN][0]
        errors.append(FieldError(f"{path}.addedAffinity", "not modelled by the prediction"))
    return replace(profile, **changes)


def _resources(listed: Any, here: str, errors: list[FieldError]) -> dict[str, int]:
    """``[{name, weight}]`` -> name -> weight, cpu and memory only."""
    named: dict[str, int] = {}
    if not isinstance(listed, list):
        errors.append(FieldError(here, "must be a list"))
        return named
    for position, entry in enumerate(listed):
        path = f"{here}[{position}]"
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name not in RESOURCES:
            errors.append(FieldError(path, f"{name!r}: the prediction models cpu and memory"))
            continue
        weight = entry.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
            errors.append(FieldError(f"{path}.weight", "must be a non-negative integer"))
            continue
        named[name] = weight
    return named
