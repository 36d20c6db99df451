"""scripts/install-systemd and uninstall-systemd against a staging tree (``--root``): the
layout, idempotence, an edited config kept, the unit verified by systemd-analyze, the agent
run as the unit runs it on a node that has no kubeconfig yet, and joining the cluster with a
token bound to the node's Node object: the kubeconfig written, rotated, and every token the
admission policy would refuse refused here.

The staged venv gets the package from a wheel built here, without its dependencies
(``--pip-arg=--no-deps``): installing those from the index takes minutes and is pip's job.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from agent.kube.connection import connect
from agent.kube.tokenclaims import bearer_token, decode_token
from tests.harness import kubeobjects
from tests.harness.cli import wait_for_output
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.localhttp import get
from tests.harness.nodereport import register_crd
from tests.harness.ports import free_port
from tests.harness.repository import REPO
from tests.harness.tls import self_signed_certificate
from tests.harness.tokens import service_account_token
from tests.harness.wheel import build_wheel

# One staged install (a venv: the slow part) serves the module: its tests share a worker.
pytestmark = pytest.mark.xdist_group("install-staged")
INSTALL = REPO / "scripts" / "install-systemd"
UNINSTALL = REPO / "scripts" / "uninstall-systemd"
UNIT = Path("etc/systemd/system/kubelet-companion.service")
CONFIG = Path("etc/kubelet-companion/agent.yaml")
VENV = Path("opt/kubelet-companion")
DROPIN = Path("etc/systemd/logind.conf.d/99-zz-kubelet-companion.conf")


@dataclass(frozen=True)
class Staged:
    root: Path
    wheel: Path
    output: str


def _run(script: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The script as an operator runs it, with ``PYTHON`` (the interpreter its
    ``pick_python`` tries first) naming this one: the search through ``python3.13``,
    ``python3.12``... starts each candidate on every run, and ``scripts/test`` has made
    that search already."""
    return subprocess.run(
        [str(script), *args], input=stdin, capture_output=True, text=True, timeout=600,
        check=False, env={**os.environ, "PYTHON": sys.executable},
    )  # fmt: skip


def _install(root: Path, wheel: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _run(
        INSTALL, "--root", str(root), "--wheel", str(wheel),
        "--pip-arg=--no-deps", "--pip-arg=--no-index", *extra,
    )  # fmt: skip


@pytest.fixture(scope="session")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Staged:
    """One staged install, shared: creating a venv is the slow part."""
    pytest.importorskip("setuptools", minversion="77", reason="the test extras build the wheel")
    wheel, output = build_wheel(tmp_path_factory.mktemp("wheel"))
    assert wheel is not None, output
    root = tmp_path_factory.mktemp("stage")
    result = _install(root, wheel)
    assert result.returncode == 0, result.stdout + result.stderr
    return Staged(root, wheel, result.stdout)


@pytest.fixture
def copy_of_staged(staged: Staged, tmp_path: Path) -> Path:
    """A private copy of the staged tree, for tests that change it. The venv's files are
    hard links (pip and the interpreter replace files, never write into them; copying
    thousands of them was most of these tests' time); everything else is copied."""
    root = tmp_path / "stage"
    venv = str(staged.root / VENV)

    def link_or_copy(source: str, target: str) -> object:
        if source.startswith(venv + os.sep):
            os.link(source, target)
            return target
        return shutil.copy2(source, target)

    shutil.copytree(staged.root, root, symlinks=True, copy_function=link_or_copy)
    return root


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under /etc of the tree, with its size and modification time."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted((root / "etc").rglob("*"))
        if path.is_file()
    }


def test_dry_run_prints_every_step_and_changes_nothing(tmp_path: Path) -> None:
    """``--dry-run --root`` names each step it would take (venv, package, unit, config), says
    the daemon-reload is skipped because the root is a staging tree, and writes nothing."""
    root = tmp_path / "stage"
    result = _run(INSTALL, "--dry-run", "--root", str(root))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for step in (
        "dry run: nothing is changed",
        "would create the virtualenv /opt/kubelet-companion",
        "would install kubelet-companion (",
        "would install /etc/systemd/system/kubelet-companion.service",
        "would install /etc/kubelet-companion/agent.yaml",
        "would install /etc/kubelet-companion/env.example",
        "skip systemctl daemon-reload: --root",
    ):
        assert step in out, out
    assert not root.exists()


def test_the_staged_tree_holds_the_venv_the_unit_and_the_config(staged: Staged) -> None:
    """After ``--root`` the tree has the venv's console script (the unit's ExecStart), the
    repository's unit and config, mode 0644, and no env file (so the agent runs node-only)."""
    binary = staged.root / VENV / "bin" / "kubelet-companion"
    assert os.access(binary, os.X_OK)
    assert (staged.root / UNIT).read_bytes() == (
        REPO / "systemd/kubelet-companion.service"
    ).read_bytes()
    assert (staged.root / CONFIG).read_bytes() == (REPO / "systemd/agent.yaml").read_bytes()
    for relative in (UNIT, CONFIG):
        assert (staged.root / relative).stat().st_mode & 0o777 == 0o644
    assert not (staged.root / "etc/kubelet-companion/env").exists()
    assert "skip systemctl daemon-reload: --root" in staged.output


def test_systemd_analyze_verify_passes_on_the_staged_unit(copy_of_staged: Path) -> None:
    """``systemd-analyze verify --root`` accepts the installed unit: its keys, and ExecStart
    resolving to the venv the script installed (the host's systemd units and mkdir are
    copied in, as a node has them)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    units = Path("/usr/lib/systemd/system")
    if not (units / "multi-user.target").exists():
        pytest.skip("this host has no systemd units to verify against")
    root = copy_of_staged
    shutil.copytree(units, root / "usr/lib/systemd/system", symlinks=True)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(shutil.which("mkdir") or "/usr/bin/mkdir", root / "usr/bin/mkdir")
    if not (root / "bin").exists():
        (root / "bin").symlink_to("usr/bin")
    result = subprocess.run(
        [analyze, "verify", f"--root={root}", "kubelet-companion.service"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    # Unknown keys are only warnings (exit 0): any output at all fails the test.
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout + result.stderr == ""


def test_a_second_install_changes_nothing(staged: Staged, copy_of_staged: Path) -> None:
    """Run again on its own tree, the script finds the venv, the unit and the config as it
    left them and rewrites none of them."""
    before = _snapshot(copy_of_staged)
    result = _install(copy_of_staged, staged.wheel)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok: virtualenv /opt/kubelet-companion" in result.stdout
    assert "kubelet-companion.service (in" in result.stdout
    assert result.stdout.count("is up to date") == 3, result.stdout
    assert _snapshot(copy_of_staged) == before


def test_an_edited_config_is_kept_and_ours_goes_beside_it(
    staged: Staged, copy_of_staged: Path
) -> None:
    """An operator's edited agent.yaml survives a reinstall byte for byte; the shipped one
    is written to agent.yaml.new, and a third run changes nothing more."""
    config = copy_of_staged / CONFIG
    edited = config.read_text() + "logLevel: debug\n"
    config.write_text(edited)
    result = _install(copy_of_staged, staged.wheel)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "keep /etc/kubelet-companion/agent.yaml" in result.stdout
    assert config.read_text() == edited
    shipped = (REPO / "systemd/agent.yaml").read_text()
    assert config.with_name("agent.yaml.new").read_text() == shipped
    before = _snapshot(copy_of_staged)
    again = _install(copy_of_staged, staged.wheel)
    assert "ours is already in /etc/kubelet-companion/agent.yaml.new" in again.stdout
    assert _snapshot(copy_of_staged) == before


def test_uninstall_removes_ours_and_keeps_the_config_unless_purged(copy_of_staged: Path) -> None:
    """Uninstall removes the unit, the venv and the agent's logind drop-in, keeps the config
    (and a drop-in someone else wrote at that path); a second run is a no-op; ``--purge``
    then removes the config too."""
    root = copy_of_staged
    (root / DROPIN).parent.mkdir(parents=True)
    (root / DROPIN).write_text(
        "# Written by kubelet-companion: ...\n[Login]\nInhibitDelayMaxSec=35\n"
    )
    dry = _run(UNINSTALL, "--dry-run", "--root", str(root))
    assert dry.returncode == 0, dry.stderr
    assert "would remove /opt/kubelet-companion" in dry.stdout
    assert (root / UNIT).exists()
    result = _run(UNINSTALL, "--root", str(root))
    assert result.returncode == 0, result.stderr
    assert not (root / UNIT).exists()
    assert not (root / VENV).exists()
    assert not (root / DROPIN).exists()
    assert (root / CONFIG).exists()
    assert "keep /etc/kubelet-companion" in result.stdout
    again = _run(UNINSTALL, "--root", str(root))
    assert again.returncode == 0, again.stderr
    assert not [line for line in again.stdout.splitlines() if line.startswith("remove ")]
    purged = _run(UNINSTALL, "--purge", "--root", str(root))
    assert purged.returncode == 0, purged.stderr
    assert not (root / "etc/kubelet-companion").exists()


def test_uninstall_keeps_a_logind_dropin_it_did_not_write(tmp_path: Path) -> None:
    """A file at the drop-in's path without the agent's header is someone else's: kept."""
    dropin = tmp_path / DROPIN
    dropin.parent.mkdir(parents=True)
    dropin.write_text("[Login]\nInhibitDelayMaxSec=600\n")
    result = _run(UNINSTALL, "--root", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert dropin.exists()
    assert "not written by kubelet-companion" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--wheel", "/nonexistent/x.whl"], "/nonexistent/x.whl: not a wheel file",
                     id="missing-wheel"),
        pytest.param(["--root", str(INSTALL)], "not a directory", id="root-is-a-file"),
    ],
)  # fmt: skip
def test_bad_arguments_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    """A wheel that is not there or a --root that is a file: exit 2, the argument named, no
    traceback, nothing installed."""
    root_args = [] if "--root" in args else ["--root", str(tmp_path / "stage")]
    result = _run(INSTALL, *root_args, *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "stage").exists()


# -- the agent as the unit runs it -----------------------------------------------------


def _service_section(unit: Path) -> list[tuple[str, str]]:
    section = ""
    entries = []
    for raw in unit.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]":
            key, _, value = line.partition("=")
            entries.append((key, value))
    return entries


def _unit_environment(root: Path, entries: list[tuple[str, str]]) -> dict[str, str]:
    """The variables the unit gives its process, as systemd reads them (files from the tree;
    a missing ``-`` file is skipped, a missing plain one is an error)."""
    env: dict[str, str] = {}
    for key, value in entries:
        if key == "Environment":
            for assignment in shlex.split(value):
                name, _, setting = assignment.partition("=")
                env[name] = setting
        elif key == "EnvironmentFile":
            optional = value.startswith("-")
            path = root / value.removeprefix("-").lstrip("/")
            if not path.exists():
                assert optional, f"EnvironmentFile {value} is missing and not optional"
                continue
            for line in path.read_text().splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    name, _, setting = line.partition("=")
                    env[name.strip()] = setting.strip()
    return env


@contextlib.contextmanager
def _as_the_unit_runs_it(root: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """The agent started with the unit's ExecStart arguments and environment in the tree
    ``root``, on its config (ports, state and logind drop-in moved into ``tmp_path``), and
    killed afterwards if still running."""
    entries = _service_section(root / UNIT)
    (exec_start,) = [value for key, value in entries if key == "ExecStart"]
    argv = shlex.split(exec_start)
    assert argv[0] == "/opt/kubelet-companion/bin/kubelet-companion"
    config_at = argv.index("--config") + 1
    config = yaml.safe_load((root / argv[config_at].lstrip("/")).read_text())
    port = free_port()
    config["metricsBindAddress"] = f"127.0.0.1:{port}"
    config["stateDir"] = str(tmp_path / "state")
    config.setdefault("shutdown", {})["logindDropInPath"] = str(tmp_path / "logind/99.conf")
    local = tmp_path / "agent.yaml"
    local.write_text(yaml.safe_dump(config))
    argv[config_at] = str(local)
    # systemd's own environment for a service: no KUBECONFIG, no in-cluster variables, and
    # ProtectHome= hides ~/.kube; HOME points at an empty directory to the same effect.
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    env |= _unit_environment(root, entries)
    if "KUBECONFIG" in env:  # the node's path, read from the tree
        env["KUBECONFIG"] = str(root / env["KUBECONFIG"].lstrip("/"))
    process = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", *argv[1:]],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def unit_process(staged: Staged, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """The agent as the staged unit runs it."""
    with _as_the_unit_runs_it(staged.root, tmp_path) as started:
        yield started


def test_without_an_env_file_the_unit_runs_the_agent_node_only(
    unit_process: tuple[subprocess.Popen[str], int],
) -> None:
    """On a node with no /etc/kubelet-companion/env yet, the unit's agent does not exit (no
    crash loop on a kubeconfig that is not there): it says it runs node-only, serves
    /healthz, and exits 0 on SIGTERM."""
    process, port = unit_process
    assert process.stdout is not None
    lines: list[str] = []

    def read() -> None:
        for line in process.stdout or []:
            lines.append(line)  # noqa: PERF402 - each line must be visible as it arrives

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    wait_for_output(process, lambda: "".join(lines), "node-only mode", 60)
    assert get(f"http://127.0.0.1:{port}/healthz", timeout=1)[0] == 200
    assert process.poll() is None, "".join(lines)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0, "".join(lines)


# -- joining the cluster: a token bound to the node's Node --------------------------------

KUBECONFIG = Path("etc/kubelet-companion/kubeconfig")
ENV = Path("etc/kubelet-companion/env")
SERVER = "https://api.example.test:6443"


def _token_file(tmp_path: Path, token: str, name: str = "node-1.token") -> Path:
    path = tmp_path / name
    path.write_text(token + "\n")
    return path


def _join(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return _run(INSTALL, "--root", str(root), "--credentials-only", *args, stdin=stdin)


@pytest.fixture
def ca_file(tmp_path: Path) -> Path:
    """A real PEM certificate standing for the cluster's CA bundle."""
    certificate, _ = self_signed_certificate(tmp_path)
    return certificate


def test_dry_run_with_a_node_bound_token_says_what_it_would_write(
    tmp_path: Path, ca_file: Path
) -> None:
    """``--dry-run`` with a Node-bound token names the kubeconfig (mode 0600), the env with
    the token's node, the token's node and expiry and how to rotate it, never prints the
    token itself, and writes nothing."""
    root = tmp_path / "stage"
    token = service_account_token(node="node-1")
    result = _run(
        INSTALL, "--dry-run", "--root", str(root), "--server", SERVER,
        "--certificate-authority", str(ca_file), "--token-file", str(_token_file(tmp_path, token)),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for step in (
        "would install /etc/kubelet-companion/kubeconfig",
        "would install /etc/kubelet-companion/env",
        "with NODE_NAME=node-1",
        "credentials: token of kubelet-companion-agent bound to Node node-1, expires ",
        f"server {SERVER}",
        "skip systemctl try-restart: --root",
        "--credentials-only --token-file FILE",
    ):
        assert step in out, out
    assert token not in out + result.stderr
    assert not root.exists()


def test_a_node_bound_token_becomes_the_agents_kubeconfig(
    copy_of_staged: Path, tmp_path: Path, ca_file: Path
) -> None:
    """``--credentials-only`` writes a kubeconfig (0600) the agent's own loader reads as that
    server, CA and token, bound to the token's Node, and an env (0644) that points the unit at
    it and sets NODE_NAME to that Node; the venv, unit and config are left alone."""
    root = copy_of_staged
    before = _snapshot(root)
    token = service_account_token(node="node-1")
    result = _join(
        root, "--server", SERVER, "--certificate-authority", str(ca_file),
        "--token-file", str(_token_file(tmp_path, token)),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "install kubelet-companion (" not in result.stdout
    kubeconfig, env = root / KUBECONFIG, root / ENV
    assert kubeconfig.stat().st_mode & 0o777 == 0o600
    assert env.stat().st_mode & 0o777 == 0o644
    assert {k: v for k, v in _snapshot(root).items() if k in before} == before
    connection = connect(str(kubeconfig))
    assert connection is not None
    try:
        assert connection.api_client.configuration.host == SERVER
        assert Path(connection.api_client.configuration.ssl_ca_cert).read_bytes() == (
            ca_file.read_bytes()
        )
        assert bearer_token(connection.api_client) == token
        claims = decode_token(token)
        assert claims is not None
        assert claims.node_name == "node-1"
    finally:
        connection.api_client.close()
    unit_env = _unit_environment(root, _service_section(root / UNIT))
    assert unit_env["KUBECONFIG"] == "/etc/kubelet-companion/kubeconfig"
    assert unit_env["NODE_NAME"] == "node-1"


def test_rotating_the_token_keeps_the_server_and_ca_and_changes_only_the_kubeconfig(
    copy_of_staged: Path, tmp_path: Path, ca_file: Path
) -> None:
    """A second run with a new token on stdin and no --server rewrites the kubeconfig with the
    new token and the same server and CA, keeps the env; the same token again changes nothing
    but a kubeconfig someone made readable, which goes back to 0600."""
    root = copy_of_staged
    first = _token_file(tmp_path, service_account_token(node="node-1"))
    joined = _join(
        root, "--server", SERVER, "--certificate-authority", str(ca_file),
        "--token-file", str(first),
    )  # fmt: skip
    assert joined.returncode == 0, joined.stdout + joined.stderr
    cluster = json.loads((root / KUBECONFIG).read_text())["clusters"]
    env = (root / ENV).read_bytes()
    renewed = service_account_token(node="node-1", expires_in=60 * 24 * 3600)
    rotated = _join(root, "--token-file", "-", stdin=renewed)
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr
    assert "update /etc/kubelet-companion/kubeconfig" in rotated.stdout
    assert "skip systemctl try-restart" in rotated.stdout
    written = json.loads((root / KUBECONFIG).read_text())
    assert written["clusters"] == cluster
    assert written["users"][0]["user"]["token"] == renewed
    assert (root / ENV).read_bytes() == env
    (root / KUBECONFIG).chmod(0o644)
    again = _join(root, "--token-file", "-", stdin=renewed)
    assert again.returncode == 0, again.stderr
    assert "ok: /etc/kubelet-companion/kubeconfig" in again.stdout
    assert "try-restart" not in again.stdout
    assert "mode 0600 (it holds the token)" in again.stdout
    assert (root / KUBECONFIG).stat().st_mode & 0o777 == 0o600


def test_an_env_naming_another_node_is_kept_with_a_note(
    copy_of_staged: Path, tmp_path: Path
) -> None:
    """An operator's env is never rewritten; when its NODE_NAME is not the token's Node the
    script says the agent's writes would be denied and what to set."""
    root = copy_of_staged
    (root / ENV).write_text("KUBECONFIG=/etc/kubelet-companion/kubeconfig\nNODE_NAME=old\n")
    token = _token_file(tmp_path, service_account_token(node="node-1"))
    result = _join(root, "--server", SERVER, "--token-file", str(token))
    assert result.returncode == 0, result.stderr
    assert "NODE_NAME=old" in (root / ENV).read_text()
    assert "sets NODE_NAME=old but the token is bound to Node node-1" in result.stdout
    assert "set NODE_NAME=node-1" in result.stdout


@pytest.mark.parametrize(
    ("token", "extra", "message"),
    [
        pytest.param(
            service_account_token(), [], "bound to no Node, so the cluster's admission policy",
            id="unbound",
        ),
        pytest.param(
            service_account_token(node="node-1", pod="kubelet-companion-agent-x7k2p"), [],
            "bound to pod kubelet-companion-agent-x7k2p", id="pod-bound",
        ),
        pytest.param(
            service_account_token(
                subject="system:serviceaccount:kubelet-companion:kubelet-companion-descheduler",
                node="node-1",
            ), [], "not of system:serviceaccount:kubelet-companion:kubelet-companion-agent",
            id="other-account",
        ),
        pytest.param(
            service_account_token(node="node-1", expires_in=-60), [], "the token expired",
            id="expired",
        ),
        pytest.param(
            service_account_token(node="node-2"), ["--node", "node-1"],
            "bound to Node node-2, not node-1", id="other-node",
        ),
        pytest.param("not-a-jwt", [], "not a service-account token", id="opaque"),
        pytest.param("", [], "empty", id="empty"),
    ],
)  # fmt: skip
def test_a_token_the_admission_policy_would_refuse_is_refused(
    tmp_path: Path, token: str, extra: list[str], message: str
) -> None:
    """A token bound to no Node, to a pod, of another account, expired, for another node, or
    not a token at all: exit 2 with the reason (and, for a missing binding, the kubectl
    command that makes one), no traceback, nothing written."""
    root = tmp_path / "stage"
    root.mkdir()
    result = _join(
        root, "--server", SERVER, "--token-file", str(_token_file(tmp_path, token)), *extra
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    if "no Node" in message:
        assert "--bound-object-kind Node --bound-object-name NODE" in result.stderr
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--credentials-only"], "need --token-file", id="credentials-only-alone"),
        pytest.param(["--server", SERVER], "need --token-file", id="server-alone"),
        pytest.param(["--token-file", "TOKEN"], "--server URL is needed", id="no-server"),
        pytest.param(
            ["--token-file", "TOKEN", "--server", "api.example:6443"], "not an http(s) URL",
            id="server-without-scheme",
        ),
        pytest.param(
            ["--token-file", "TOKEN", "--server", SERVER, "--certificate-authority", "TOKEN"],
            "no PEM certificate", id="ca-not-pem",
        ),
    ],
)  # fmt: skip
def test_bad_credential_arguments_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    """Credential options without a token, a token without a server to send it to, a server
    that is not a URL or a CA file without a certificate: exit 2 naming it, nothing written."""
    token = str(_token_file(tmp_path, service_account_token(node="node-1")))
    root = tmp_path / "stage"
    result = _run(INSTALL, "--root", str(root), *[token if a == "TOKEN" else a for a in args])
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert not root.exists()


def test_the_unit_joins_the_cluster_with_the_node_bound_kubeconfig(
    copy_of_staged: Path, tmp_path: Path, fake_apiserver: FakeApiServer
) -> None:
    """With the kubeconfig the script wrote from n1's Node-bound token, the agent as the unit
    runs it connects, says its token is bound to node n1 (no admission warning) and
    publishes n1's NodeReport, owned by Node n1."""
    register_crd(fake_apiserver)
    node = fake_apiserver.create(kubeobjects.node("n1"))
    token = _token_file(tmp_path, service_account_token(node="n1"))
    joined = _join(copy_of_staged, "--server", fake_apiserver.url, "--token-file", str(token))
    assert joined.returncode == 0, joined.stdout + joined.stderr
    assert "plain http" in joined.stdout
    with _as_the_unit_runs_it(copy_of_staged, tmp_path) as (process, _):
        report = fake_apiserver.wait_for(
            "nodereports", "n1", lambda obj: obj is not None, timeout=60
        )
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert report is not None
    (owner,) = report["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Node", "n1", node["metadata"]["uid"])
    (connected,) = [line for line in output.splitlines() if "connected to cluster" in line]
    assert "bound to node n1" in connected
    assert "admission policy" not in output
