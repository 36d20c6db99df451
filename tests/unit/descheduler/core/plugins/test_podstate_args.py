"""``kubelet-companion descheduler`` refuses bad pod-state plugin args: exit 2, the path named."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli import main


def _policy(plugin: str, args: str) -> str:
    return (
        "apiVersion: descheduler/v1alpha2\n"
        "kind: DeschedulerPolicy\n"
        "profiles:\n"
        "- name: p\n"
        "  pluginConfig:\n"
        f"  - name: {plugin}\n"
        f"    args: {args}\n"
        "  plugins:\n"
        "    deschedule:\n"
        f"      enabled: [{plugin}]\n"
    )


@pytest.mark.parametrize(
    ("plugin", "args", "expected"),
    [
        pytest.param(
            "RemovePodsHavingTooManyRestarts",
            "{podRestartThreshold: 0}",
            "profiles[0].pluginConfig[0].args.podRestartThreshold: invalid "
            "PodsHavingTooManyRestarts threshold",
            id="restarts-threshold",
        ),
        pytest.param(
            "PodLifeTime",
            "{maxPodLifeTimeSeconds: 60, ownerKinds: {include: [Job], exclude: [ReplicaSet]}}",
            "profiles[0].pluginConfig[0].args.ownerKinds: only one of include and exclude",
            id="lifetime-owner-kinds",
        ),
        pytest.param(
            "PodLifeTime",
            "{states: [Sleeping]}",
            "profiles[0].pluginConfig[0].args.states: 'Sleeping': states must be one of",
            id="lifetime-states",
        ),
        pytest.param(
            "RemoveFailedPods",
            "{minPodLifetimeSeconds: -5}",
            "profiles[0].pluginConfig[0].args.minPodLifetimeSeconds: must be >= 0",
            id="failed-min-lifetime",
        ),
    ],
)
def test_bad_plugin_args_exit_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plugin: str, args: str, expected: str
) -> None:
    """A bad arg of each pod-state plugin exits 2 with its path, no traceback, no connection."""
    path = tmp_path / "policy.yaml"
    path.write_text(_policy(plugin, args))
    code = main(["descheduler", "--policy-config-file", str(path), "--kubeconfig", "/nonexistent"])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert "Traceback" not in err
