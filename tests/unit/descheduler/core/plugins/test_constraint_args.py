"""Args of the four constraint plugins: upstream's validation, every error with its path."""

from __future__ import annotations

from typing import Any

import pytest

from agent.config.errors import ConfigError
from agent.descheduler.core.framework.registry import REGISTRY
from agent.descheduler.core.plugins.removepodsviolatingnodeaffinity import (
    RemovePodsViolatingNodeAffinityArgs,
)
from agent.descheduler.core.plugins.removepodsviolatingnodetaints import (
    RemovePodsViolatingNodeTaintsArgs,
)
from agent.descheduler.core.plugins.removepodsviolatingtopologyspreadconstraint import (
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from agent.descheduler.core.policy import parse_policy

ANTI = "RemovePodsViolatingInterPodAntiAffinity"
AFFINITY = "RemovePodsViolatingNodeAffinity"
TAINTS = "RemovePodsViolatingNodeTaints"
SPREAD = "RemovePodsViolatingTopologySpreadConstraint"
PATH = "profiles[0].pluginConfig[0].args"


def _raw(name: str, args: Any) -> dict[str, Any]:
    point = next(iter(REGISTRY[name].extension_points)).lower()
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [
            {
                "name": "p",
                "pluginConfig": [{"name": name, "args": args}],
                "plugins": {point: {"enabled": [name]}},
            }
        ],
    }


def _errors(name: str, args: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_policy(_raw(name, args), "<test>")
    return [str(error) for error in caught.value.errors]


def _args(name: str, args: Any) -> Any:
    return parse_policy(_raw(name, args), "<test>").profiles[0].args[name]


BOTH_NAMESPACES = {"namespaces": {"include": ["a"], "exclude": ["b"]}}
BAD_SELECTOR = {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}}


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        pytest.param(
            ANTI,
            BOTH_NAMESPACES,
            [f"{PATH}.namespaces: only one of include and exclude can be set"],
            id="anti-affinity-namespaces",
        ),
        pytest.param(
            ANTI,
            BAD_SELECTOR,
            [f"{PATH}.labelSelector: unknown operator 'Near'"],
            id="anti-affinity-label-selector",
        ),
        pytest.param(
            ANTI,
            {"nodeFit": True},
            [f"{PATH}.nodeFit: unknown field (known: labelSelector, namespaces)"],
            id="anti-affinity-unknown-field",
        ),
        pytest.param(
            AFFINITY,
            {},
            [f"{PATH}.nodeAffinityType: nodeAffinityType needs to be set"],
            id="node-affinity-type-missing",
        ),
        pytest.param(
            AFFINITY,
            {"nodeAffinityType": ["requiredDuringSchedulingRequiredDuringExecution"]},
            [
                f"{PATH}.nodeAffinityType[0]: must be one of "
                "'requiredDuringSchedulingIgnoredDuringExecution', "
                "'preferredDuringSchedulingIgnoredDuringExecution'"
            ],
            id="node-affinity-type-unknown",
        ),
        pytest.param(
            AFFINITY,
            {**BOTH_NAMESPACES, **BAD_SELECTOR, "nodeAffinityType": []},
            [
                f"{PATH}.namespaces: only one of include and exclude can be set",
                f"{PATH}.labelSelector: unknown operator 'Near'",
            ],
            id="node-affinity-namespaces-and-selector",
        ),
        pytest.param(
            TAINTS,
            {"includedTaints": ["a"], "excludedTaints": ["b"]},
            [
                f"{PATH}.includedTaints: either includedTaints or excludedTaints can be set, "
                "but not both"
            ],
            id="taints-included-and-excluded",
        ),
        pytest.param(
            TAINTS,
            {"includePreferNoSchedule": "yes", "excludedTaints": "a"},
            [
                f"{PATH}.includePreferNoSchedule: must be true or false",
                f"{PATH}.excludedTaints: must be a list",
            ],
            id="taints-field-types",
        ),
        pytest.param(
            TAINTS,
            BOTH_NAMESPACES,
            [f"{PATH}.namespaces: only one of include and exclude can be set"],
            id="taints-namespaces",
        ),
        pytest.param(
            SPREAD,
            {"constraints": ["DoNotSchedule", "Sometimes"]},
            [f"{PATH}.constraints[1]: must be one of 'DoNotSchedule', 'ScheduleAnyway'"],
            id="spread-constraint-unknown",
        ),
        pytest.param(
            SPREAD,
            {"topologyBalanceNodeFit": "no"},
            [f"{PATH}.topologyBalanceNodeFit: must be true or false"],
            id="spread-node-fit-type",
        ),
        pytest.param(
            SPREAD,
            {**BOTH_NAMESPACES, **BAD_SELECTOR},
            [
                f"{PATH}.namespaces: only one of include and exclude can be set",
                f"{PATH}.labelSelector: unknown operator 'Near'",
            ],
            id="spread-namespaces-and-selector",
        ),
    ],
)
def test_bad_args_are_reported_with_their_path(name: str, args: Any, expected: list[str]) -> None:
    """Each upstream validation rule (and each field's type) names the field that breaks it."""
    assert _errors(name, args) == expected


def test_spread_defaults() -> None:
    """Without args the spread plugin balances DoNotSchedule constraints with node fit on."""
    args = _args(SPREAD, None)
    assert args == RemovePodsViolatingTopologySpreadConstraintArgs()
    assert args.topology_balance_node_fit is True
    assert args.constraints == ()  # read as [DoNotSchedule]


def test_taints_tell_an_absent_included_list_from_an_empty_one() -> None:
    """``includedTaints`` absent includes every taint; ``[]`` is kept as an empty list."""
    assert _args(TAINTS, {}).included_taints is None
    assert _args(TAINTS, {"includedTaints": []}).included_taints == ()
    assert _args(TAINTS, {"excludedTaints": ["a=b"]}) == RemovePodsViolatingNodeTaintsArgs(
        excluded_taints=("a=b",)
    )


def test_node_affinity_types_keep_their_order() -> None:
    """The affinity types run in the order the policy lists them."""
    types = [
        "preferredDuringSchedulingIgnoredDuringExecution",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ]
    args = _args(AFFINITY, {"nodeAffinityType": types})
    assert args == RemovePodsViolatingNodeAffinityArgs(node_affinity_type=tuple(types))
