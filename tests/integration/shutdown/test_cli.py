"""``kubelet-companion shutdown plan`` against the fake API server: a dry run of the grouping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cli import main
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import owner_ref
from tests.harness.shutdownpods import pod
from tests.integration.shutdown.conftest import NODE, ensure_priority_classes


def write_config(tmp_path: Path, body: str) -> Path:
    config = tmp_path / "agent.yaml"
    config.write_text(f"nodeName: {NODE}\nstateDir: {tmp_path}\n{body}")
    return config


def test_plan_prints_phases_and_pods_and_changes_nothing(
    fake_apiserver: FakeApiServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The plan groups this node's pods like a shutdown would, and sends no write."""
    pods = [
        pod("web", grace_seconds=5),
        pod("api", priority=1000, grace_seconds=60),
        pod("proxy", owner=owner_ref("DaemonSet", "proxy")),
    ]
    ensure_priority_classes(fake_apiserver, pods)
    for each in pods:
        fake_apiserver.create(each)
    fake_apiserver.create(pod("elsewhere", node="node-2"))
    monkeypatch.setenv("KUBECONFIG", str(fake_apiserver.write_kubeconfig(tmp_path / "kc")))
    config = write_config(
        tmp_path,
        "shutdownGracePeriodByPodPriority:\n"
        "  - {priority: 0, shutdownGracePeriodSeconds: 10}\n"
        "  - {priority: 1000, shutdownGracePeriodSeconds: 20}\n",
    )
    fake_apiserver.clear_requests()

    assert main(["shutdown", "plan", "--config", str(config), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [[p["name"] for p in phase["pods"]] for phase in document["phases"]] == [
        ["web"],
        ["api"],
    ]
    assert [p["pods"][0]["gracePeriodSeconds"] for p in document["phases"]] == [5, 20]
    assert document["skipped"] == [{"namespace": "default", "name": "proxy", "reason": "daemonset"}]
    assert {r.method for r in fake_apiserver.requests()} == {"GET"}

    assert main(["shutdown", "plan", "--config", str(config)]) == 0
    table = capsys.readouterr().out
    assert "default/web  priority 0  grace 5s" in table
    assert "+30s" in table


def test_plan_in_node_only_mode_says_there_are_no_pods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a cluster the plan shows the phases and says there is nothing to terminate."""
    monkeypatch.setenv("KUBECONFIG", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    config = write_config(
        tmp_path, "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n"
    )
    assert main(["shutdown", "plan", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "node-only mode" in out
    assert "budget 30s" in out


def test_plan_reports_an_unreachable_api_server(
    fake_apiserver: FakeApiServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An API error exits 1 with the reason on stderr and prints no plan."""
    monkeypatch.setenv("KUBECONFIG", str(fake_apiserver.write_kubeconfig(tmp_path / "kc")))
    config = write_config(tmp_path, "shutdownGracePeriod: 30s\n")
    fake_apiserver.faults.add("GET", "/pods", status=403, times=None)
    assert main(["shutdown", "plan", "--config", str(config)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"cannot list the pods of node {NODE}" in captured.err


def test_plan_with_shutdown_off_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With shutdownGracePeriod 0s the command explains that shutdown handling is off."""
    config = write_config(tmp_path, "shutdownGracePeriod: 0s\n")
    assert main(["shutdown", "plan", "--config", str(config)]) == 0
    assert "graceful node shutdown is off" in capsys.readouterr().err


def test_plan_with_buckets_of_zero_seconds_says_shutdown_is_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Buckets that add up to 0 s turn shutdown off for the agent (no lock), so the plan says
    it is off too, rather than printing a plan of 0 s."""
    config = write_config(
        tmp_path,
        "shutdownGracePeriodByPodPriority:\n"
        "- {priority: 0, shutdownGracePeriodSeconds: 0}\n"
        "- {priority: 100000, shutdownGracePeriodSeconds: 0}\n",
    )
    assert main(["shutdown", "plan", "--config", str(config)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "graceful node shutdown is off" in captured.err


def test_plan_with_a_bad_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both shutdown forms at once is kubelet's config error: exit 2, the field named."""
    config = write_config(
        tmp_path,
        "shutdownGracePeriod: 30s\nshutdownGracePeriodByPodPriority: "
        "[{priority: 0, shutdownGracePeriodSeconds: 5}]\n",
    )
    assert main(["shutdown", "plan", "--config", str(config)]) == 2
    assert "shutdownGracePeriodByPodPriority: cannot be set together" in capsys.readouterr().err


def test_plan_with_an_unreadable_kubeconfig_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kubeconfig that cannot be loaded is a runtime failure, reported, with no plan."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    config = write_config(tmp_path, "shutdownGracePeriod: 30s\n")
    assert main(["shutdown", "plan", "--config", str(config)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "cannot load the cluster config" in captured.err
