"""NodeShutdownRecovery: out-of-service only on our completed-shutdown evidence, off when Ready."""

from __future__ import annotations

from typing import Any

import pytest

from agent.config.errors import ConfigError
from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.model.cluster import NodeUsage
from agent.descheduler.model.taintrecord import RecordedTaint, RecordKey, TaintRecord
from agent.kubesemantics.nodekeys import OUT_OF_SERVICE_ANNOTATION
from tests.harness.deschedulerstate import NOW, node, policy, snapshot

RECOVERY = "NodeShutdownRecovery"
OOS = "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
OOS_TAINT = {
    "key": "node.kubernetes.io/out-of-service",
    "value": "nodeshutdown",
    "effect": "NoExecute",
}


def down(
    name: str = "down",
    *,
    ready: bool = False,
    since: float = NOW - 600,
    boot: str = "boot-1",
    ours: bool = False,
    taints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A node whose Ready condition changed at ``since``, reporting boot ``boot``."""
    import datetime as dt  # noqa: PLC0415 - only here

    built = node(name, ready=ready, taints=taints or [])
    stamp = dt.datetime.fromtimestamp(since, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    built["status"]["conditions"][0]["lastTransitionTime"] = stamp
    built["status"]["nodeInfo"] = {"bootID": boot}
    if ours:
        built["metadata"]["annotations"] = {OUT_OF_SERVICE_ANNOTATION: "nodeshutdown"}
    return built


def report(
    name: str = "down",
    *,
    completed: bool = True,
    boot: str = "boot-1",
    shutting: bool = True,
    changed_at: float = NOW - 630,
    witnessed: bool = True,
) -> NodeUsage:
    """A believed report (stale by now), last seen to change at ``changed_at``: by default
    30 s before ``down()``'s node went NotReady, a change the descheduler witnessed."""
    return NodeUsage(
        name,
        {},
        {},
        stale=True,
        shutting_down=shutting,
        gated=False,
        agent_stopped=False,
        shutdown_completed=completed,
        boot_id=boot,
        changed_at=changed_at,
        stale_after=180.0,
        change_witnessed=witnessed,
    )


def recorded(*nodes: str) -> TaintRecord:
    """Our record on the Lease, holding an out-of-service taint of ours on ``nodes``."""
    key = OUT_OF_SERVICE_ANNOTATION
    return TaintRecord().with_entries(
        (RecordKey(key, name), RecordedTaint("nodeshutdown")) for name in nodes
    )


def _changes(
    args: dict[str, Any] | None,
    items: list[dict[str, Any]],
    usage: dict[str, NodeUsage],
    record: TaintRecord | None = None,
) -> list[str]:
    plan = run_cycle(
        policy((RECOVERY, args)),
        snapshot(node("a"), node("b"), *items, node_usage=usage, taint_record=record),
    )
    return [f"{'+' if c.add else '-'}{c.node}:{c.taint}" for c in plan.taints]


@pytest.mark.parametrize(
    ("args", "items", "usage", "changes"),
    [
        pytest.param(
            None, [down()], {"down": report()}, [f"+down:{OOS}"], id="evidence-and-long-enough"
        ),
        pytest.param(None, [down(since=NOW - 60)], {"down": report()}, [], id="not-long-enough"),
        pytest.param(
            {"notReadySeconds": 30},
            [down(since=NOW - 60)],
            {"down": report(changed_at=NOW - 90)},
            [f"+down:{OOS}"],
            id="configurable-time",
        ),
        pytest.param(
            None,
            [down()],
            {"down": report(witnessed=False)},
            [],
            id="found-at-start-not-witnessed",
        ),
        pytest.param(
            None,
            [down()],
            {"down": report(changed_at=NOW - 600 + 120)},
            [],
            id="report-changed-after-the-node-went-notready",
        ),
        pytest.param(
            None,
            [down()],
            {"down": report(changed_at=NOW - 600 + 50)},
            [f"+down:{OOS}"],
            id="within-the-clock-skew",
        ),
        pytest.param(
            None,
            [down()],
            {"down": report(changed_at=NOW - 600 - 181)},
            [],
            id="report-already-stale-when-the-node-went-notready",
        ),
        pytest.param(
            None,
            [down()],
            {"down": report(changed_at=NOW - 600 - 180)},
            [f"+down:{OOS}"],
            id="report-fresh-to-the-last-second",
        ),
        pytest.param(None, [down()], {}, [], id="no-report-no-taint"),
        pytest.param(
            None, [down()], {"down": report(completed=False)}, [], id="shutdown-in-progress-only"
        ),
        pytest.param(
            None,
            [down()],
            {"down": report(completed=False, shutting=False)},
            [],
            id="no-shutdown-at-all",
        ),
        pytest.param(
            None, [down(boot="boot-2")], {"down": report()}, [], id="booted-since-the-report"
        ),
        pytest.param(None, [down(boot="")], {"down": report(boot="")}, [], id="no-boot-ids"),
        pytest.param(None, [down(ready=True)], {"down": report()}, [], id="ready-node"),
        pytest.param(
            None,
            [down(taints=[OOS_TAINT])],
            {"down": report()},
            [],
            id="operators-taint-left-alone",
        ),
        pytest.param(
            None, [down(ready=True, taints=[OOS_TAINT])], {}, [], id="ready-again-not-ours-kept"
        ),
    ],
)
def test_out_of_service_taint(
    args: dict[str, Any] | None,
    items: list[dict[str, Any]],
    usage: dict[str, NodeUsage],
    changes: list[str],
) -> None:
    """The taint goes on only with our evidence, and comes off only if we put it on."""
    assert _changes(args, items, usage) == changes


@pytest.mark.parametrize(
    ("items", "record", "changes"),
    [
        pytest.param(
            [down(ours=True, taints=[OOS_TAINT])], recorded("down"), [], id="already-ours"
        ),
        pytest.param(
            [down()], recorded("down"), [], id="recorded-not-yet-in-the-cache-not-added-twice"
        ),
        pytest.param(
            [down(ready=True, ours=True, taints=[OOS_TAINT])],
            recorded("down"),
            [f"-down:{OOS}"],
            id="ready-again-removed",
        ),
        pytest.param(
            [down(ready=True, ours=True, taints=[OOS_TAINT])],
            recorded(),
            [],
            id="forged-mark-beside-an-operators-taint-kept",
        ),
        pytest.param(
            [down(ours=True, taints=[OOS_TAINT])],
            recorded(),
            [],
            id="forged-mark-beside-an-operators-taint-not-ours-while-down",
        ),
        pytest.param(
            [down(ours=True)], recorded(), [f"+down:{OOS}"], id="forged-mark-does-not-stop-it"
        ),
        pytest.param(
            [down(ready=True, ours=True, taints=[OOS_TAINT])],
            recorded("other"),
            [],
            id="another-nodes-entry-is-not-this-ones",
        ),
    ],
)
def test_only_our_record_says_the_taint_is_ours(
    items: list[dict[str, Any]], record: TaintRecord, changes: list[str]
) -> None:
    """Whether an out-of-service taint is ours is the record's to say: a node's own mark
    neither makes it ours (it is never removed for it) nor keeps ours off a node that is down."""
    assert _changes(None, items, {"down": report()}, record) == changes


def test_the_taints_reason_names_the_evidence() -> None:
    """The reason (which the Event on the Node carries) says what was believed: the owner's
    uid, the boot, and how long before NotReady the report last changed."""
    plan = run_cycle(
        policy((RECOVERY, None)),
        snapshot(node("a"), node("b"), down(), node_usage={"down": report()}),
    )
    (change,) = plan.taints
    assert "NotReady for 600s; evidence: its agent's NodeReport (owned by Node uid" in change.reason
    assert "completed in boot boot-1" in change.reason
    assert "last changed 30s before the node went NotReady" in change.reason


def test_node_without_ready_transition_is_left_alone() -> None:
    """With no known time of becoming NotReady, how long it has been is unknown: no taint."""
    bare = node("down", ready=False)
    bare["status"]["nodeInfo"] = {"bootID": "boot-1"}
    assert _changes(None, [bare], {"down": report()}) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"notReadySeconds": -5},
            "profiles[0].pluginConfig[1].args.notReadySeconds: must be >= 0",
            id="negative",
        ),
        pytest.param(
            {"notReady": 5}, "profiles[0].pluginConfig[1].args.notReady", id="unknown-field"
        ),
    ],
)
def test_bad_args_are_named_with_their_path(args: dict[str, Any], message: str) -> None:
    """A bad arg is reported with its path in the policy."""
    with pytest.raises(ConfigError) as raised:
        policy((RECOVERY, args))
    assert any(message in line for line in str(raised.value).splitlines())


def test_runs_when_the_cycle_is_skipped_for_too_few_ready_nodes() -> None:
    """With one Ready node left the cycle is skipped, but the down node is still tainted."""
    plan = run_cycle(
        policy((RECOVERY, None)), snapshot(node("a"), down(), node_usage={"down": report()})
    )
    assert plan.skipped
    assert [c.node for c in plan.taints] == ["down"]
