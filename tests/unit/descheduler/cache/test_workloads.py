"""Deployments, ReplicaSets and StatefulSets: projected to what implicit budgets read, the same
on the msgspec and json paths, read from a snapshot file (and bad values named), and the
offline plan's report of what implicit budgets hold (or that they fell back)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main
from agent.config.errors import ConfigError
from agent.descheduler.cache.projection import ProjectionError
from agent.descheduler.cache.snapshotfile import load_snapshot
from agent.descheduler.cache.wire import codec_for
from agent.descheduler.cache.workloads import project_workload
from agent.descheduler.model.cluster import OwnerRef, WorkloadInfo
from tests.harness import kubeobjects
from tests.harness.deschedulerstate import node, pod
from tests.harness.kubeobjects import owner_ref

NOW = 1_800_000_000.0
DEPLOYMENT_REF = owner_ref("Deployment", "web", uid="d-1")

RICH: dict[str, dict[str, Any]] = {
    "Deployment": kubeobjects.workload(
        "Deployment", "web", uid="d-1", replicas=12, max_unavailable="30%", max_surge=2
    ),
    "ReplicaSet": kubeobjects.workload(
        "ReplicaSet", "web-1", uid="r-1", replicas=12, owner=DEPLOYMENT_REF
    ),
    "StatefulSet": kubeobjects.workload(
        "StatefulSet", "db", uid="s-1", replicas=3, strategy="OnDelete"
    ),
}
for _obj in RICH.values():  # what the API server sends besides: never kept
    _obj["metadata"] |= {"labels": {"app": "x"}, "annotations": {"a": "b"}, "resourceVersion": "7"}
    _obj["status"] = {"replicas": 12, "readyReplicas": 11}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        pytest.param(
            "Deployment",
            WorkloadInfo(
                kind="Deployment",
                namespace="default",
                name="web",
                uid="d-1",
                replicas=12,
                strategy="RollingUpdate",
                max_unavailable="30%",
                max_surge=2,
            ),
            id="deployment",
        ),
        pytest.param(
            "ReplicaSet",
            WorkloadInfo(
                kind="ReplicaSet",
                namespace="default",
                name="web-1",
                uid="r-1",
                replicas=12,
                controller=OwnerRef(kind="Deployment", name="web", uid="d-1", controller=True),
            ),
            id="replicaset",
        ),
        pytest.param(
            "StatefulSet",
            WorkloadInfo(
                kind="StatefulSet",
                namespace="default",
                name="db",
                uid="s-1",
                replicas=3,
                strategy="OnDelete",
            ),
            id="statefulset",
        ),
    ],
)
def test_each_kind_keeps_what_implicit_budgets_read(kind: str, expected: WorkloadInfo) -> None:
    """Replicas, the rollout's type and settings, a ReplicaSet's Deployment; the same on the
    msgspec path as on json's."""
    assert project_workload(RICH[kind], kind) == expected
    page = json.dumps({"metadata": {}, "items": [RICH[kind]]}).encode()
    (decoded,) = codec_for(kind).decode_page(page)["items"]
    assert project_workload(decoded, kind) == expected


def test_absent_fields_are_the_api_servers_defaults() -> None:
    """No replicas is 1; no strategy is the default rolling update (its values ``None``)."""
    bare = project_workload({"metadata": {"name": "d", "uid": "u"}}, "Deployment")
    assert (bare.replicas, bare.strategy, bare.max_unavailable, bare.max_surge) == (
        1,
        "",
        None,
        None,
    )


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        pytest.param({"replicas": -1}, "spec.replicas", id="negative-replicas"),
        pytest.param({"replicas": True}, "spec.replicas", id="boolean-replicas"),
        pytest.param(
            {"strategy": {"rollingUpdate": {"maxUnavailable": "lots"}}},
            "spec.strategy.rollingUpdate.maxUnavailable",
            id="not-a-percentage",
        ),
        pytest.param(
            {"strategy": {"rollingUpdate": {"maxUnavailable": "150%"}}},
            "spec.strategy.rollingUpdate.maxUnavailable",
            id="over-100-percent",
        ),
        pytest.param(
            {"strategy": {"rollingUpdate": {"maxSurge": -2}}},
            "spec.strategy.rollingUpdate.maxSurge",
            id="negative-surge",
        ),
        pytest.param({"strategy": "fast"}, "spec.strategy", id="strategy-not-an-object"),
    ],
)
def test_what_the_api_server_would_refuse_is_named(spec: dict[str, Any], path: str) -> None:
    """A value the API server validates away is a ``ProjectionError`` at its field."""
    with pytest.raises(ProjectionError) as raised:
        project_workload({"metadata": {"name": "d"}, "spec": spec}, "Deployment")
    assert raised.value.path == path


def _list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_a_snapshot_file_reads_the_workloads(tmp_path: Path) -> None:
    """A kubectl List with the three kinds: each read by UID; other kinds still ignored."""
    daemon_set = kubeobjects.daemon_set("agent")
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_list(*RICH.values(), daemon_set)))
    loaded = load_snapshot(path, now=NOW)
    assert {w.uid: w.kind for w in loaded.snapshot.workloads.values()} == {
        "d-1": "Deployment",
        "r-1": "ReplicaSet",
        "s-1": "StatefulSet",
    }
    assert loaded.ignored == {"DaemonSet": 1}


def test_a_bad_workload_in_a_file_is_named(tmp_path: Path) -> None:
    """Bad workloads are refused with their item's path, as any other bad item."""
    wrong_type = kubeobjects.workload("Deployment", "a", replicas=1)
    wrong_type["spec"]["replicas"] = "three"
    wrong_value = kubeobjects.workload("Deployment", "b", max_unavailable="lots")
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_list(wrong_type, wrong_value)))
    with pytest.raises(ConfigError) as raised:
        load_snapshot(path, now=NOW)
    assert [error.path for error in raised.value.errors] == [
        "items[0].spec.replicas",
        "items[1].spec.strategy.rollingUpdate.maxUnavailable",
    ]


DUPLICATES = (
    "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
    "- name: p\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates]\n"
)


def _plan(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    workloads: bool,
    flags: tuple[str, ...] = (),
) -> tuple[int, str, str]:
    """``web`` (4 replicas: 1 at once) has its 4 Ready pods on n1 of 3 nodes, 2 of them
    duplicates to evict."""
    items = [node("n1"), node("n2"), node("n3")]
    items += [
        pod(f"web-{i}", "n1", owner=owner_ref("ReplicaSet", "web-1", uid="r-1")) for i in range(4)
    ]
    if workloads:
        items += [
            kubeobjects.workload("Deployment", "web", uid="d-1", replicas=4),
            kubeobjects.workload(
                "ReplicaSet", "web-1", uid="r-1", replicas=4, owner=DEPLOYMENT_REF
            ),
        ]
    snapshot = tmp_path / "s.json"
    snapshot.write_text(json.dumps(_list(*items)))
    policy = tmp_path / "policy.yaml"
    policy.write_text(DUPLICATES)
    argv = ["descheduler", "plan", "--snapshot", str(snapshot), "--policy-config-file", str(policy)]
    code = main([*argv, *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_offline_plan_reports_what_an_implicit_budget_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One duplicate goes at once; the other is held by the Deployment's implicit budget,
    in the JSON and in the table, placed where it goes once the budget allows."""
    code, out, err = _plan(tmp_path, capsys, workloads=True, flags=("--output", "json"))
    assert code == 0
    plan = json.loads(out)
    assert [
        (e["pod"], e["blockedByPDB"], e["implicitBudget"], e["held"]) for e in plan["evictions"]
    ] == [
        ("default/web-2", False, None, False),
        ("default/web-3", False, "Deployment default/web", True),
    ]
    assert plan["summary"]["heldByImplicitBudget"] == 1
    assert "not in the snapshot" not in err
    code, out, _ = _plan(tmp_path, capsys, workloads=True)
    assert code == 0
    (held,) = [line for line in out.splitlines() if line.startswith("default/web-3 ")]
    assert "implicit: Deployment default/web" in held
    assert "once its budget allows" in held
    assert (
        "1 pods would be evicted at once, 0 held by a PodDisruptionBudget (sent as it allows), "
        "1 held by their workload's implicit budget (sent as replacements turn Ready)" in out
    )


def test_a_snapshot_without_workloads_falls_back_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the workloads the plan still comes: the ReplicaSet's 4 pods seen stand in for
    its replicas (1 at once), and stderr says which budgets fell back and how to dump them."""
    code, out, err = _plan(tmp_path, capsys, workloads=False, flags=("--output", "json"))
    assert code == 0
    assert [e["implicitBudget"] for e in json.loads(out)["evictions"]] == [
        None,
        "ReplicaSet default/web-1",
    ]
    assert "implicit budgets of 1 workloads not in the snapshot (ReplicaSet default/web-1)" in err
    assert "add deployments,replicasets,statefulsets to the kubectl get" in err


@pytest.mark.parametrize("value", ["false", "0", "False"])
def test_the_flag_turns_them_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """``--implicit-rollout-budgets=false``: nothing is held, nothing falls back."""
    flags = ("--output", "json", f"--implicit-rollout-budgets={value}")
    code, out, err = _plan(tmp_path, capsys, workloads=False, flags=flags)
    assert code == 0
    assert [e["held"] for e in json.loads(out)["evictions"]] == [False, False]
    assert "not in the snapshot" not in err


def test_a_bad_flag_value_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A value that is not a boolean is a usage error naming the flag."""
    code, _, err = _plan(
        tmp_path, capsys, workloads=True, flags=("--implicit-rollout-budgets=maybe",)
    )
    assert code == 2
    assert "--implicit-rollout-budgets: not a boolean: 'maybe'" in err
