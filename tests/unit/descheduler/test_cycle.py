"""One cycle: nodes, profile and plugin order, plugin failures, durations, the plan's JSON."""

from __future__ import annotations

import gc
import itertools
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main
from agent.descheduler.core.cycle import TOO_FEW_NODES, CycleOptions, run_cycle
from agent.descheduler.core.plugins.removeduplicates import RemoveDuplicates
from agent.descheduler.core.policy import parse_policy
from agent.descheduler.live.runner import plan_cycle
from tests.harness.deschedulerstate import node, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref
from tests.harness.repository import EXAMPLES

DUP = "RemoveDuplicates"


def _replicas(node_name: str, count: int, owner: str = "rs") -> list[dict[str, Any]]:
    return [
        pod(f"{owner}-{node_name}-{i}", node_name, owner=owner_ref("ReplicaSet", owner))
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("items", "top"),
    [
        pytest.param([node("n1"), *_replicas("n1", 3)], {}, id="one-node"),
        pytest.param(
            [node("n1"), node("n2", ready=False), *_replicas("n1", 3)], {}, id="one-ready-node"
        ),
        pytest.param(
            [node("n1", labels={"pool": "a"}), node("n2"), *_replicas("n1", 3)],
            {"nodeSelector": "pool=a"},
            id="one-selected-node",
        ),
    ],
)
def test_fewer_than_two_nodes_skips_the_cycle(
    items: list[dict[str, Any]], top: dict[str, Any]
) -> None:
    """With at most one Ready node of the nodeSelector the cycle does nothing and says why."""
    plan = run_cycle(policy((DUP, None), **top), snapshot(*items))
    assert plan.skipped == TOO_FEW_NODES
    assert plan.evictions == []


def test_cordoned_nodes_stay_in_the_cycle() -> None:
    """An unschedulable but Ready node still counts as a node of the cycle."""
    plan = run_cycle(
        policy((DUP, None)),
        snapshot(node("n1"), node("n2", unschedulable=True), *_replicas("n1", 3)),
    )
    assert plan.skipped == ""
    assert [e.name for e in plan.allowed] == ["rs-n1-2"]


def _two_profiles(first_args: dict[str, Any] | None = None) -> Any:
    profiles = [
        {
            "name": name,
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": args or {}},
                {"name": DUP, "args": {"namespaces": {"include": [namespace]}}},
            ],
            "plugins": {"balance": {"enabled": [DUP]}},
        }
        for name, namespace, args in (("first", "one", first_args), ("second", "two", None))
    ]
    return parse_policy(
        {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": profiles},
        "<test>",
    )


def _namespaced(namespace: str) -> list[dict[str, Any]]:
    return [pod(f"{namespace}-{i}", "n1", namespace=namespace) for i in range(3)]


def test_profiles_run_in_order_with_one_shared_evictor() -> None:
    """Every profile's Balance plugins run in policy order, and share one set of limits."""
    state = snapshot(node("n1"), node("n2"), *_namespaced("one"), *_namespaced("two"))
    plan = run_cycle(_two_profiles(), state)
    assert [(e.profile, e.name) for e in plan.allowed] == [("first", "one-2"), ("second", "two-2")]
    limited_policy = {**_policy_raw(_two_profiles_raw()), "maxNoOfPodsToEvictTotal": 1}
    limited = run_cycle(parse_policy(limited_policy, "<test>"), state)
    assert [(e.profile, e.name) for e in limited.allowed] == [("first", "one-2")]


def _two_profiles_raw() -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "pluginConfig": [{"name": DUP, "args": {"namespaces": {"include": [namespace]}}}],
            "plugins": {"balance": {"enabled": [DUP]}},
        }
        for name, namespace in (("first", "one"), ("second", "two"))
    ]


def _policy_raw(profiles: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "profiles": profiles}


def test_a_profile_that_cannot_build_is_skipped() -> None:
    """A profile whose plugins fail to build is reported; the other profiles still run."""
    state = snapshot(node("n1"), node("n2"), *_namespaced("one"), *_namespaced("two"))
    plan = run_cycle(_two_profiles({"priorityThreshold": {"name": "missing"}}), state)
    assert [(e.profile, e.name) for e in plan.allowed] == [("second", "two-2")]
    assert plan.errors == ["profile first: priority class 'missing' not found"]


def test_a_failing_plugin_does_not_stop_the_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin that raises is logged and recorded; the next plugin still runs."""
    calls = itertools.count()

    def flaky(self: RemoveDuplicates, nodes: Any) -> None:
        if next(calls) == 0:
            raise RuntimeError("boom")
        original(self, nodes)

    original = RemoveDuplicates.balance
    monkeypatch.setattr(RemoveDuplicates, "balance", flaky)
    state = snapshot(node("n1"), node("n2"), *_namespaced("one"), *_namespaced("two"))
    plan = run_cycle(_two_profiles(), state)
    assert [(e.profile, e.name) for e in plan.allowed] == [("second", "two-2")]
    assert plan.errors == ["profile first: plugin RemoveDuplicates: RuntimeError: boom"]


def test_durations_per_plugin() -> None:
    """Each plugin run is timed with the injected clock, for the strategy-duration metric."""
    ticks = iter([1.0, 1.5, 10.0, 10.25])
    state = snapshot(node("n1"), node("n2"), *_namespaced("one"))
    plan = run_cycle(_two_profiles(), state, CycleOptions(monotonic=lambda: next(ticks)))
    assert plan.durations == [
        {"profile": "first", "plugin": DUP, "extensionPoint": "balance", "seconds": 0.5},
        {"profile": "second", "plugin": DUP, "extensionPoint": "balance", "seconds": 0.25},
    ]


def test_plan_json_shape() -> None:
    """The plan prints in the one documented shape, in decision order."""
    plan = run_cycle(policy((DUP, None)), snapshot(node("n1"), node("n2"), *_replicas("n1", 3)))
    assert plan.as_json() == {
        "evictions": [
            {
                "pod": "default/rs-n1-2",
                "node": "n1",
                "plugin": DUP,
                "profile": "p",
                "reason": DUP,
                "blockedByPDB": False,
                "implicitBudget": None,
                "held": False,
                "destination": None,
                "destinationCandidates": [],
            }
        ],
        "nodes": [],
        "summary": {
            "planned": 1,
            "allowed": 1,
            "blockedByPDB": 0,
            "held": 0,
            "heldByImplicitBudget": 0,
            "byPlugin": {DUP: 1},
            "skipped": None,
        },
    }


def test_pods_evicted_earlier_in_the_cycle_are_gone_for_later_plugins() -> None:
    """A pod one plugin evicted is terminating for the next, as the informer would show it."""
    state = snapshot(node("n1"), node("n2"), *_replicas("n1", 3))
    raw = _policy_raw(
        [
            {
                "name": name,
                "pluginConfig": [{"name": DUP}],
                "plugins": {"balance": {"enabled": [DUP]}},
            }
            for name in ("first", "second")
        ]
    )
    plan = run_cycle(parse_policy(raw, "<test>"), state)
    # Had the second profile still seen rs-n1-2, it would have picked it again.
    assert [(e.profile, e.name) for e in plan.allowed] == [
        ("first", "rs-n1-2"),
        ("second", "rs-n1-1"),
    ]


def _recording_collector_state(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the cyclic garbage collector is on, each time RemoveDuplicates balances."""
    seen: list[bool] = []
    original = RemoveDuplicates.balance

    def recording(self: RemoveDuplicates, nodes: Any) -> None:
        seen.append(gc.isenabled())
        original(self, nodes)

    monkeypatch.setattr(RemoveDuplicates, "balance", recording)
    return seen


def test_the_live_cycle_plans_with_the_collector_paused_and_it_resumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The running process's cycle (``plan_cycle``) has the cyclic garbage collector off while
    the plugins plan (their short-lived containers hold no cycles) and back on once it
    returns; the pure planner alone leaves the collector as it is."""
    seen = _recording_collector_state(monkeypatch)
    assert gc.isenabled()
    state = snapshot(node("n1"), node("n2"), *_namespaced("one"), *_namespaced("two"))
    plan_cycle(_two_profiles(), state, CycleOptions())
    assert seen == [False, False]
    assert gc.isenabled()
    run_cycle(_two_profiles(), state)
    assert seen == [False, False, True, True]


def test_the_offline_plan_runs_its_cycle_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``descheduler plan`` has the cyclic garbage collector off while the plugins plan, and
    back on once the command returns."""
    seen = _recording_collector_state(monkeypatch)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
        "- name: default\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates]\n"
    )
    argv = ["descheduler", "plan", "--snapshot", str(EXAMPLES / "snapshot.json.gz")]
    assert main([*argv, "--policy-config-file", str(policy_file), "--output", "json"]) == 0
    capsys.readouterr()
    assert seen == [False]
    assert gc.isenabled()
