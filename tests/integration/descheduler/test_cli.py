"""``kubelet-companion descheduler`` from the command line: dry run, output, exit codes."""

import json
from pathlib import Path

import pytest

from agent.cli import build_parser, main
from agent.descheduler.live.command import resolve_options
from tests.harness.fake_apiserver import FakeApiServer
from tests.integration.descheduler.conftest import duplicates_cluster


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["descheduler", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dry_run_table_shows_pdb_blocked_pods_and_evicts_nothing(
    fake_apiserver: FakeApiServer,
    kubeconfig: Path,
    policy_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With a PDB at 0 disruptions, the dry run lists its pods as blocked by it, lists the
    allowed ones too, and sends no eviction at all."""
    duplicates_cluster(fake_apiserver)
    code, out, _ = _run(
        capsys,
        "--policy-config-file", str(policy_file),
        "--kubeconfig", str(kubeconfig),
        "--dry-run",
        "--metrics-bind-address", "127.0.0.1:0",
    )  # fmt: skip
    assert code == 0
    rows = [line.split() for line in out.splitlines()[1:] if line.startswith("default/")]
    assert sorted((row[0], row[-1]) for row in rows) == [
        ("default/db-1", "default/db"),
        ("default/db-2", "default/db"),
        ("default/web-1", "-"),
        ("default/web-2", "-"),
    ]
    assert out.splitlines()[0].split() == ["POD", "NODE", "PLUGIN", "REASON", "BLOCKED-BY-PDB"]
    assert not [r for r in fake_apiserver.requests(method="POST") if "eviction" in r.path]


def test_dry_run_json_is_the_plan_shape(
    fake_apiserver: FakeApiServer,
    kubeconfig: Path,
    policy_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--output json`` prints the one plan shape, blockedByPDB set where a PDB forbids."""
    duplicates_cluster(fake_apiserver)
    code, out, _ = _run(
        capsys,
        "--policy-config-file", str(policy_file),
        "--kubeconfig", str(kubeconfig),
        "--dry-run", "--output", "json",
        "--metrics-bind-address", "127.0.0.1:0",
    )  # fmt: skip
    assert code == 0
    plan = json.loads(out)
    blocked = {e["pod"]: e["blockedByPDB"] for e in plan["evictions"]}
    assert blocked == {
        "default/web-1": False,
        "default/web-2": False,
        "default/db-1": True,
        "default/db-2": True,
    }
    assert plan["summary"]["allowed"] == 2
    assert plan["summary"]["blockedByPDB"] == 2
    assert not [r for r in fake_apiserver.requests(method="POST") if "eviction" in r.path]


@pytest.mark.parametrize(
    ("policy", "flags", "expected"),
    [
        pytest.param(
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
            "- name: p\n  plugins:\n    balance:\n      enabled: [NoSuchPlugin]\n",
            (),
            "NoSuchPlugin",
            id="unknown-plugin",
        ),
        pytest.param("a: [", (), "YAML", id="not-yaml"),
        pytest.param(
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n",
            ("--descheduling-interval", "ten"),
            "--descheduling-interval",
            id="bad-interval",
        ),
        pytest.param(
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n",
            ("--leader-elect",),
            "leaderElect",
            id="leader-elect-one-shot",
        ),
        pytest.param(
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n",
            ("--leader-elect-retry-period", "soon"),
            "--leader-elect-retry-period",
            id="bad-election-duration",
        ),
        pytest.param(
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n",
            ("--leader-elect-lease-duration", "10s", "--leader-elect-renew-deadline", "20s"),
            "--leader-elect-lease-duration",
            id="renew-deadline-past-the-lease",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    flags: tuple[str, ...],
    expected: str,
) -> None:
    """A bad policy or flag exits 2 with the problem named and no traceback, before any
    connection is attempted."""
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    code, _, err = _run(capsys, "--policy-config-file", str(path), *flags)
    assert code == 2
    assert expected in err
    assert "Traceback" not in err


def test_missing_policy_flag_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """Without ``--policy-config-file`` (and none in ``--config``) the command exits 2."""
    code, _, err = _run(capsys)
    assert code == 2
    assert "--policy-config-file" in err


def test_the_shipped_deployment_flags_resolve() -> None:
    """The flags daemonset/base/descheduler-deployment.yaml passes (upstream's names) resolve
    to a looping, leader-elected run whose Lease lives in the given namespace."""
    args = build_parser().parse_args(
        [
            "descheduler",
            "--policy-config-file=/etc/kubelet-companion/policy.yaml",
            "--descheduling-interval=5m",
            "--leader-elect",
            "--leader-elect-resource-namespace=kubelet-companion",
            "--client-connection-qps=50",
            "--client-connection-burst=100",
        ]
    )
    options = resolve_options(args)
    assert (options.descheduling_interval, options.leader_elect) == (300.0, True)
    assert (options.lease_namespace, options.lease_name) == ("kubelet-companion", "descheduler")
    assert (options.client_connection_qps, options.client_connection_burst) == (50.0, 100)
