"""``kubelet-companion descheduler`` refuses bad args of the constraint plugins: exit 2."""

from pathlib import Path

import pytest

from agent.cli import main
from agent.descheduler.core.framework.registry import REGISTRY

POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: {name}
    args: {args}
  plugins:
    {point}:
      enabled: [{name}]
"""
PATH = "profiles[0].pluginConfig[0].args"


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        pytest.param(
            "RemovePodsViolatingInterPodAntiAffinity",
            "{namespaces: {include: [a], exclude: [b]}}",
            f"{PATH}.namespaces: only one of include and exclude can be set",
            id="anti-affinity",
        ),
        pytest.param(
            "RemovePodsViolatingNodeAffinity",
            "{}",
            f"{PATH}.nodeAffinityType: nodeAffinityType needs to be set",
            id="node-affinity",
        ),
        pytest.param(
            "RemovePodsViolatingNodeTaints",
            "{includedTaints: [a], excludedTaints: [b]}",
            f"{PATH}.includedTaints: either includedTaints or excludedTaints can be set",
            id="node-taints",
        ),
        pytest.param(
            "RemovePodsViolatingTopologySpreadConstraint",
            "{constraints: [Sometimes]}",
            f"{PATH}.constraints[0]: must be one of 'DoNotSchedule', 'ScheduleAnyway'",
            id="topology-spread",
        ),
    ],
)
def test_bad_plugin_args_exit_2_naming_the_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    args: str,
    expected: str,
) -> None:
    """A bad arg of each constraint plugin exits 2 with its path, before any connection."""
    path = tmp_path / "policy.yaml"
    point = next(iter(REGISTRY[name].extension_points)).lower()
    path.write_text(POLICY.format(name=name, args=args, point=point))
    code = main(["descheduler", "--policy-config-file", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert "Traceback" not in err
