"""RemovePodsViolatingNodeAffinity: required affinity no longer met, a better preferred node."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from agent.descheduler.cache.projection import project_pod
from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.core.plugins.removepodsviolatingnodeaffinity import has_node_affinity
from tests.harness.deschedulerstate import node, pod, policy, snapshot

AFFINITY = "RemovePodsViolatingNodeAffinity"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _in(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def required(key: str = "zone", *values: str) -> dict[str, Any]:
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [_in(key, *(values or ("a",)))]}}}


def preferred(*terms: tuple[int, str, str]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            PREFERRED: [{"weight": w, "preference": _in(key, value)} for w, key, value in terms]
        }
    }


def _evicted(types: list[str], *items: dict[str, Any], **extra_args: Any) -> list[str]:
    args = {"nodeAffinityType": types, **extra_args}
    return [e.name for e in run_cycle(policy((AFFINITY, args)), snapshot(*items)).allowed]


ZONES = [node("n1", labels={"zone": "b"}), node("n2", labels={"zone": "a"})]


@pytest.mark.parametrize(
    ("items", "evicted"),
    [
        pytest.param([*ZONES, pod("p", "n1", affinity=required())], ["p"], id="no-longer-matches"),
        pytest.param([*ZONES, pod("p", "n2", affinity=required())], [], id="still-matches"),
        pytest.param(
            [*ZONES, pod("p", "n1", affinity=required("zone", "c"))],
            [],
            id="no-node-matches-so-it-stays",
        ),
        pytest.param(
            [*ZONES, pod("p", "n1", node_selector={"zone": "a"})],
            [],
            id="node-selector-alone-is-not-node-affinity",
        ),
        pytest.param(
            [
                node("n1", labels={"zone": "a"}),
                node("n2", labels={"zone": "a", "disk": "ssd"}),
                pod("p", "n1", affinity=required(), node_selector={"disk": "ssd"}),
            ],
            ["p"],
            id="node-selector-counts-once-affinity-is-set",
        ),
        pytest.param(
            [
                node("n1", labels={"zone": "b"}),
                node("n2", labels={"zone": "a"}, cpu="100m"),
                pod("p", "n1", affinity=required(), cpu="500m"),
            ],
            [],
            id="matching-node-too-small",
        ),
        pytest.param(
            [
                node("n1", labels={"zone": "b"}),
                node("n2", labels={"zone": "a"}, unschedulable=True),
                pod("p", "n1", affinity=required()),
            ],
            [],
            id="matching-node-cordoned",
        ),
        pytest.param(
            [*ZONES, pod("p", "n1", affinity=required(), phase="Succeeded")],
            [],
            id="finished-pod",
        ),
    ],
)
def test_required(items: list[dict[str, Any]], evicted: list[str]) -> None:
    """A pod with required node affinity leaves a node it no longer matches, if a node fits it."""
    assert _evicted([REQUIRED], *items) == evicted


@pytest.mark.parametrize(
    ("items", "evicted"),
    [
        pytest.param(
            [*ZONES, pod("p", "n1", affinity=preferred((10, "zone", "a")))],
            ["p"],
            id="other-node-preferred",
        ),
        pytest.param(
            [*ZONES, pod("p", "n2", affinity=preferred((10, "zone", "a")))],
            [],
            id="already-on-the-preferred-node",
        ),
        pytest.param(
            [*ZONES, pod("p", "n1", affinity=preferred((10, "zone", "a"), (10, "zone", "b")))],
            [],
            id="equal-weights",
        ),
        pytest.param(
            [*ZONES, pod("p", "n1", affinity=preferred((5, "zone", "a"), (10, "zone", "b")))],
            [],
            id="own-node-weighs-more",
        ),
        pytest.param(
            [
                node("n1", labels={"zone": "b"}),
                node("n2", labels={"zone": "a"}, cpu="100m"),
                pod("p", "n1", affinity=preferred((10, "zone", "a")), cpu="500m"),
            ],
            [],
            id="preferred-node-has-no-room",
        ),
        pytest.param(
            [
                node("n1", labels={"zone": "b"}),
                node("n2", labels={"zone": "a"}, taints=[{"key": "k", "effect": "NoSchedule"}]),
                pod("p", "n1", affinity=preferred((10, "zone", "a"))),
            ],
            [],
            id="preferred-node-tainted",
        ),
        pytest.param([*ZONES, pod("p", "n1")], [], id="no-affinity"),
    ],
)
def test_preferred(items: list[dict[str, Any]], evicted: list[str]) -> None:
    """A pod leaves when another node both outweighs its own in preferred affinity and fits it."""
    assert _evicted([PREFERRED], *items) == evicted


def test_only_the_listed_type_runs() -> None:
    """With only ``required...`` listed, a pod that merely prefers another node stays."""
    items = [*ZONES, pod("p", "n1", affinity=preferred((10, "zone", "a")))]
    assert _evicted([REQUIRED], *items) == []


def test_both_types_run_in_order_and_evict_once() -> None:
    """Both checks run, required first; a pod both condemn is evicted once, by the first."""
    both = {
        "nodeAffinity": {
            **required()["nodeAffinity"],
            **preferred((1, "zone", "a"))["nodeAffinity"],
        }
    }
    items = [
        *ZONES,
        pod("r", "n1", affinity=both),
        pod("q", "n1", affinity=preferred((10, "zone", "a"))),
    ]
    plan = run_cycle(
        policy((AFFINITY, {"nodeAffinityType": [REQUIRED, PREFERRED]})), snapshot(*items)
    )
    assert [(e.name, e.reason.split(":")[0]) for e in plan.allowed] == [
        ("r", "node no longer matches"),
        ("q", "node n2 has preferred weight 10 > 0 and fits"),
    ]


@pytest.mark.parametrize(
    ("extra_args", "evicted"),
    [
        pytest.param({"namespaces": {"exclude": ["default"]}}, [], id="namespace-excluded"),
        pytest.param({"namespaces": {"include": ["default"]}}, ["p"], id="namespace-included"),
        pytest.param({"labelSelector": {"matchLabels": {"app": "db"}}}, [], id="selector-excludes"),
        pytest.param(
            {"labelSelector": {"matchLabels": {"app": "web"}}}, ["p"], id="selector-includes"
        ),
    ],
)
def test_namespaces_and_label_selector(extra_args: dict[str, Any], evicted: list[str]) -> None:
    """The ``namespaces`` and ``labelSelector`` args narrow the pods considered."""
    items = [*ZONES, pod("p", "n1", affinity=required(), labels={"app": "web"})]
    assert _evicted([REQUIRED], *items, **extra_args) == evicted


def test_total_limit_ends_the_run() -> None:
    """At the total limit the plugin stops, even between affinity types."""
    items = [
        *ZONES,
        pod("a", "n1", affinity=required()),
        pod("b", "n1", affinity=preferred((10, "zone", "a"))),
    ]
    plan = run_cycle(
        policy((AFFINITY, {"nodeAffinityType": [REQUIRED, PREFERRED]}), maxNoOfPodsToEvictTotal=1),
        snapshot(*items),
    )
    assert [e.name for e in plan.allowed] == ["a"]


@pytest.mark.parametrize(
    ("affinity", "affinity_type", "has"),
    [
        pytest.param({"nodeAffinity": {REQUIRED: {}}}, REQUIRED, True, id="required-set-if-empty"),
        pytest.param({"nodeAffinity": {PREFERRED: []}}, PREFERRED, False, id="preferred-empty"),
        pytest.param(preferred((1, "zone", "a")), PREFERRED, True, id="preferred-listed"),
        pytest.param({"nodeAffinity": {}}, REQUIRED, False, id="neither"),
        pytest.param(None, REQUIRED, False, id="no-affinity"),
    ],
)
def test_has_node_affinity(affinity: dict[str, Any] | None, affinity_type: str, has: bool) -> None:
    """``PodHasNodeAffinity``: a required selector counts when set, preferred terms when listed
    (an empty one too, which the projection refuses where it enters: set here after it)."""
    projected = msgspec.structs.replace(project_pod(pod("p", "n1")), affinity=affinity)
    assert has_node_affinity(projected, affinity_type) is has
