"""CriticalAddonRescue: which add-on, which node, which victims, and the taint before them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.config.errors import ConfigError
from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.model.cluster import NodeUsage
from agent.descheduler.model.taintrecord import RecordedTaint, RecordKey, TaintRecord
from agent.descheduler.plan.render import render_table
from agent.descheduler.plan.shape import Plan
from agent.kubesemantics.nodekeys import RESCUE_ANNOTATION
from agent.kubesemantics.taintownership import rescue_value
from tests.harness.deschedulerstate import NOW, node, pdb, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

RESCUE = "CriticalAddonRescue"
TOLERATE = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
CRITICAL = {"scheduler.alpha.kubernetes.io/critical-pod": ""}


def addon(
    name: str = "dns",
    *,
    cpu: str = "2",
    since: float = NOW - 120,
    namespace: str = "kube-system",
    annotations: dict[str, str] | None = None,
    priority: int | None = 0,
    tolerations: list[dict[str, Any]] | None = None,
    reason: str = "Unschedulable",
    **kwargs: Any,
) -> dict[str, Any]:
    """A Pending add-on the scheduler has called Unschedulable since ``since``."""
    built = pod(
        name,
        "",
        namespace=namespace,
        cpu=cpu,
        memory="128Mi",
        owner=owner_ref("ReplicaSet", name),
        annotations=CRITICAL if annotations is None else annotations,
        priority=priority,
        tolerations=TOLERATE if tolerations is None else tolerations,
        phase="Pending",
        start_time=None,
        **kwargs,
    )
    stamp = _rfc3339(since)
    built["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": reason, "lastTransitionTime": stamp}
    ]
    return built


def _rfc3339(seconds: float) -> str:
    import datetime as dt  # noqa: PLC0415 - only here

    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def filler(name: str, node_name: str, cpu: str, priority: int = 0, **kwargs: Any) -> dict[str, Any]:
    return pod(name, node_name, cpu=cpu, memory="128Mi", priority=priority, **kwargs)


def _plan(args: dict[str, Any] | None, *items: dict[str, Any], **kwargs: Any) -> Plan:
    return run_cycle(policy((RESCUE, args)), snapshot(*items, **kwargs))


def _outcome(plan: Plan) -> tuple[list[str], list[str]]:
    return [f"{t.node}:{t.taint}" for t in plan.taints], [e.name for e in plan.allowed]


TAINT = "CriticalAddonsOnly=kube-system_dns:NoSchedule"


def two_full(**addon_fields: Any) -> list[dict[str, Any]]:
    """Nodes ``a`` and ``b`` (4 CPUs each), each 3 CPUs full with one filler (``a1``, ``b1``),
    and the add-on (2 CPUs) as ``addon_fields`` make it."""
    return [
        node("a"),
        node("b"),
        filler("a1", "a", "3"),
        filler("b1", "b", "3"),
        addon(**addon_fields),
    ]


@pytest.mark.parametrize(
    ("items", "taints", "evicted"),
    [
        pytest.param(
            two_full(),
            [f"a:{TAINT}"],
            ["a1"],
            id="tie-broken-by-name",
        ),
        pytest.param(
            [
                node("a"),
                node("b"),
                *[filler(f"a{i}", "a", "1") for i in range(1, 5)],
                filler("b1", "b", "3"),
                addon(),
            ],
            [f"b:{TAINT}"],
            ["b1"],
            id="fewest-evictions",
        ),
        pytest.param(
            [
                node("a"),
                node("b"),
                filler("a1", "a", "3", priority=10),
                filler("b1", "b", "3", priority=5),
                addon(priority=100),
            ],
            [f"b:{TAINT}"],
            ["b1"],
            id="then-lowest-priority",
        ),
        pytest.param(
            [
                node("a"),
                node("b", cpu="8"),
                filler("a1", "a", "1", priority=1),
                filler("a2", "a", "2", priority=7),
                filler("b1", "b", "6", priority=9),
                filler("b2", "b", "1", priority=3),
                addon(priority=100),
            ],
            [f"a:{TAINT}"],
            ["a1"],
            id="reprieve-from-the-highest-priority",
        ),
        pytest.param(
            [
                node("a"),
                node("b"),
                filler("a1", "a", "3", priority=1000),
                filler("b1", "b", "3", priority=5),
                addon(priority=100),
            ],
            [f"b:{TAINT}"],
            ["b1"],
            id="never-a-higher-priority-victim",
        ),
        pytest.param(
            [
                node("a"),
                node("b"),
                filler("a1", "a", "3", owner=owner_ref("DaemonSet", "ds")),
                filler("b1", "b", "3", annotations={"kubernetes.io/config.mirror": "x"}),
                addon(),
            ],
            [],
            [],
            id="daemonset-and-mirror-never-removable",
        ),
        pytest.param(
            [
                node("a"),
                node("b"),
                filler("a1", "a", "3", namespace="kube-system", annotations=CRITICAL),
                filler("b1", "b", "3", priority=2_000_000_000),
                addon(priority=2_000_001_000),
            ],
            [],
            [],
            id="critical-pods-never-removable",
        ),
        pytest.param(
            [
                node("a", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
                node("b", labels={"zone": "x"}),
                node("c"),
                filler("a1", "a", "3"),
                filler("b1", "b", "3"),
                filler("c1", "c", "3"),
                addon(node_selector={"zone": "x"}),
            ],
            [f"b:{TAINT}"],
            ["b1"],
            id="node-selector-and-taints",
        ),
        pytest.param(
            [
                node("a"),
                node("b"),
                filler("a1", "a", "3"),
                filler("b1", "b", "3"),
                addon(
                    affinity={
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchFields": [
                                            {
                                                "key": "metadata.name",
                                                "operator": "In",
                                                "values": ["b"],
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    }
                ),
            ],
            [f"b:{TAINT}"],
            ["b1"],
            id="required-node-affinity",
        ),
        pytest.param(
            [
                node("a"),
                node("b", unschedulable=True),
                filler("a1", "a", "3"),
                filler("b1", "b", "1"),
                addon(),
            ],
            [f"a:{TAINT}"],
            ["a1"],
            id="cordoned-node-passed-over",
        ),
        pytest.param(
            [node("a"), node("b"), filler("a1", "a", "1"), filler("b1", "b", "3"), addon()],
            [],
            [],
            id="fits-already-is-not-ours",
        ),
        pytest.param(
            two_full(since=NOW - 10),
            [],
            [],
            id="not-unschedulable-long-enough",
        ),
        pytest.param(
            two_full(annotations={}),
            [],
            [],
            id="not-critical",
        ),
        pytest.param(
            two_full(annotations={}, priority=2_000_000_000),
            [f"a:{TAINT}"],
            ["a1"],
            id="critical-by-priority",
        ),
        pytest.param(
            two_full(namespace="default"),
            [],
            [],
            id="outside-the-system-namespaces",
        ),
        pytest.param(
            two_full(tolerations=[]),
            [],
            [],
            id="must-tolerate-the-rescue-taint",
        ),
        pytest.param(
            two_full(reason="SchedulingGated"),
            [],
            [],
            id="only-unschedulable",
        ),
        pytest.param(
            [
                node("a"),
                node("b"),
                filler("a1", "a", "3", labels={"app": "x"}),
                filler("b1", "b", "3"),
                pdb("x", match_labels={"app": "x"}),
                addon(),
            ],
            [f"b:{TAINT}"],
            ["b1"],
            id="pdb-blocked-victims-pass-the-node-over",
        ),
        pytest.param(
            [
                node(
                    "a",
                    taints=[{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}],
                ),
                node("b"),
                filler("a1", "a", "3"),
                filler("b1", "b", "3"),
                addon(),
            ],
            [f"b:{TAINT}"],
            ["b1"],
            id="node-with-a-critical-addons-taint-passed-over",
        ),
    ],
)
def test_node_and_victims(
    items: list[dict[str, Any]], taints: list[str], evicted: list[str]
) -> None:
    """The node is the one with the fewest, lowest-priority victims the add-on may use."""
    assert _outcome(_plan(None, *items)) == (taints, evicted)


def test_node_shutting_down_is_never_chosen() -> None:
    """A node whose NodeReport says it is shutting down is no room for the add-on."""
    usage = NodeUsage(
        "a", {}, {}, stale=False, shutting_down=True, gated=False, agent_stopped=False
    )
    items = two_full()
    assert _outcome(_plan(None, *items, node_usage={"a": usage})) == ([f"b:{TAINT}"], ["b1"])


def test_gated_node_is_never_chosen() -> None:
    """A node whose readiness gate is held is no room for the add-on."""
    usage = NodeUsage(
        "a", {}, {}, stale=False, shutting_down=False, gated=True, agent_stopped=False
    )
    items = two_full()
    assert _outcome(_plan(None, *items, node_usage={"a": usage})) == ([f"b:{TAINT}"], ["b1"])


def rescue_record(
    node_name: str, pod: str = "kube-system/dns", until: float = NOW + 60
) -> TaintRecord:
    """Our record on the Lease, holding a rescue of ``pod`` on ``node_name`` until ``until``."""
    entry = RecordedTaint(rescue_value(pod), until, pod)
    return TaintRecord().with_entries([(RecordKey(RESCUE_ANNOTATION, node_name), entry)])


def _busy(name: str, value: str = "kube-system_dns") -> dict[str, Any]:
    """A node with our rescue taint of ``value`` and our mark naming it."""
    busy = node(
        name, taints=[{"key": "CriticalAddonsOnly", "value": value, "effect": "NoSchedule"}]
    )
    busy["metadata"]["annotations"] = {RESCUE_ANNOTATION: value}
    return busy


def test_rescue_under_way_is_not_repeated() -> None:
    """Our record holds a rescue of this add-on: it is under way, nothing new is planned."""
    items = [_busy("a"), node("b"), filler("b1", "b", "3"), addon()]
    assert _outcome(_plan(None, *items, taint_record=rescue_record("a"))) == ([], [])


def test_recorded_rescue_is_under_way_before_the_cache_shows_its_taint() -> None:
    """The record alone says a rescue is under way: a node cache that has not yet seen the
    taint does not make the add-on rescued twice."""
    items = two_full()
    assert _outcome(_plan(None, *items, taint_record=rescue_record("a"))) == ([], [])


def test_a_forged_mark_on_a_node_does_not_stop_the_rescue() -> None:
    """A node carrying our rescue annotation for the add-on (any node may write its own) with
    no record of it: the add-on is rescued all the same, on the cheapest node."""
    forged = node("a")
    forged["metadata"]["annotations"] = {RESCUE_ANNOTATION: rescue_value("kube-system/dns")}
    items = [forged, node("b"), filler("a1", "a", "3"), filler("b1", "b", "3", priority=-1)]
    assert _outcome(_plan(None, *items, addon())) == ([f"b:{TAINT}"], ["b1"])


def test_a_forged_mark_with_its_taint_only_keeps_that_node_out() -> None:
    """A node that carries a CriticalAddonsOnly taint and our mark, unrecorded, is not chosen
    (it has such a taint), and the add-on is rescued elsewhere."""
    items = [_busy("a"), node("b"), filler("b1", "b", "3"), addon()]
    assert _outcome(_plan(None, *items)) == ([f"b:{TAINT}"], ["b1"])


def test_a_rescue_past_its_end_is_no_longer_under_way() -> None:
    """A recorded rescue whose end has passed (its entry outlived it) does not stop a new one."""
    items = two_full()
    record = rescue_record("a", until=NOW)
    assert _outcome(_plan(None, *items, taint_record=record)) == ([f"a:{TAINT}"], ["a1"])


def test_another_addons_rescue_does_not_stop_this_one() -> None:
    """A recorded rescue of another add-on leaves this one to be rescued."""
    items = two_full()
    record = rescue_record("x", pod="kube-system/metrics")
    assert _outcome(_plan(None, *items, taint_record=record)) == ([f"a:{TAINT}"], ["a1"])


def test_taint_is_planned_before_its_evictions() -> None:
    """The taint names the add-on and the evictions, and the evictions name the add-on."""
    plan = _plan(None, *two_full())
    (change,) = plan.taints
    assert change.add
    assert change.for_pod == "kube-system/dns"
    assert "default/a1" in change.reason
    assert plan.allowed[0].reason == "make room for critical add-on kube-system/dns"
    assert plan.as_json()["taints"][0]["taint"] == TAINT


def test_two_addons_never_share_a_node() -> None:
    """Each add-on gets its own node in one cycle (one rescue per node)."""
    items = [
        node("a"),
        node("b"),
        filler("a1", "a", "3"),
        filler("b1", "b", "3"),
        addon("dns"),
        addon("metrics", cpu="2"),
    ]
    assert [(t.node, t.for_pod) for t in _plan(None, *items).taints] == [
        ("a", "kube-system/dns"),
        ("b", "kube-system/metrics"),
    ]


def test_eviction_limit_leaves_the_node_alone() -> None:
    """A victim set the per-node limit would cut short is not started: no taint, no eviction."""
    items = [
        node("a"),
        node("b"),
        *[filler(f"{n}{i}", n, "1") for n in "ab" for i in range(4)],
        addon(),
    ]
    plan = run_cycle(policy((RESCUE, None), maxNoOfPodsToEvictPerNode=1), snapshot(*items))
    assert _outcome(plan) == ([], [])


def test_long_names_give_a_valid_taint_value() -> None:
    """A taint value is a label value: ``_`` for ``/``, at most 63 characters."""
    long = "kube-system/" + "x" * 80
    value = rescue_value(long)
    assert len(value) <= 63
    assert "/" not in value
    assert value != rescue_value(long + "y")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"systemNamespaces": []},
            "profiles[0].pluginConfig[1].args.systemNamespaces: must name at least one namespace",
            id="no-namespaces",
        ),
        pytest.param(
            {"systemNamespaces": [""]},
            "profiles[0].pluginConfig[1].args.systemNamespaces[0]: must not be empty",
            id="empty-namespace",
        ),
        pytest.param(
            {"unschedulableSeconds": -1},
            "profiles[0].pluginConfig[1].args.unschedulableSeconds: must be >= 0",
            id="negative-delay",
        ),
        pytest.param(
            {"taintTimeoutSeconds": 0},
            "profiles[0].pluginConfig[1].args.taintTimeoutSeconds: must be >= 1",
            id="zero-timeout",
        ),
        pytest.param(
            {"nope": 1},
            "profiles[0].pluginConfig[1].args.nope",
            id="unknown-field",
        ),
    ],
)
def test_bad_args_are_named_with_their_path(args: dict[str, Any], message: str) -> None:
    """Every bad arg is reported with its path in the policy."""
    with pytest.raises(ConfigError) as raised:
        policy((RESCUE, args))
    assert any(message in line for line in str(raised.value).splitlines())


def test_dry_run_table_shows_the_taint() -> None:
    """The dry run's table says which node would be tainted, and why."""
    plan = _plan(None, *two_full())
    assert f"add taint {TAINT} on a (CriticalAddonRescue: make room" in render_table(plan)
