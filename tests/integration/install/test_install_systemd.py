"""scripts/install-systemd and uninstall-systemd against a staging tree (``--root``): the
layout, idempotence, an edited config kept, the unit verified by systemd-analyze, and the
agent run as the unit runs it on a node that has no kubeconfig yet.

The staged venv gets the package from a wheel built here, without its dependencies
(``--pip-arg=--no-deps``): installing those from the index takes minutes and is pip's job.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
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


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(script), *args], capture_output=True, text=True, timeout=600, check=False
    )


def _install(root: Path, wheel: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _run(
        INSTALL, "--root", str(root), "--wheel", str(wheel),
        "--pip-arg=--no-deps", "--pip-arg=--no-index", *extra,
    )  # fmt: skip


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Staged:
    """One staged install, shared: creating a venv is the slow part."""
    pytest.importorskip("setuptools", minversion="77", reason="the test extras build the wheel")
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-q", "-w", str(dist), str(REPO)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("kubelet_companion-*.whl")
    root = tmp_path_factory.mktemp("stage")
    result = _install(root, wheel)
    assert result.returncode == 0, result.stdout + result.stderr
    return Staged(root, wheel, result.stdout)


@pytest.fixture
def copy_of_staged(staged: Staged, tmp_path: Path) -> Path:
    """A private copy of the staged tree, for tests that change it."""
    root = tmp_path / "stage"
    shutil.copytree(staged.root, root, symlinks=True)
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 - loopback
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


@pytest.fixture
def unit_process(staged: Staged, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """The agent started with the staged unit's ExecStart arguments and environment, on the
    staged config (its ports, state and logind drop-in moved into ``tmp_path``)."""
    entries = _service_section(staged.root / UNIT)
    (exec_start,) = [value for key, value in entries if key == "ExecStart"]
    argv = shlex.split(exec_start)
    assert argv[0] == "/opt/kubelet-companion/bin/kubelet-companion"
    config_at = argv.index("--config") + 1
    config = yaml.safe_load((staged.root / argv[config_at].lstrip("/")).read_text())
    port = _free_port()
    config["metricsBindAddress"] = f"127.0.0.1:{port}"
    config["stateDir"] = str(tmp_path / "state")
    config.setdefault("shutdown", {})["logindDropInPath"] = str(tmp_path / "logind/99.conf")
    local = tmp_path / "agent.yaml"
    local.write_text(yaml.safe_dump(config))
    argv[config_at] = str(local)
    # systemd's own environment for a service: no KUBECONFIG, no in-cluster variables, and
    # ProtectHome= hides ~/.kube; HOME points at an empty directory to the same effect.
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    env |= _unit_environment(staged.root, entries)
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
    deadline = time.monotonic() + 60
    while not any("node-only mode" in line for line in lines):
        assert process.poll() is None or reader.is_alive(), "".join(lines)
        assert time.monotonic() < deadline, "no node-only line:\n" + "".join(lines)
        time.sleep(0.05)
    assert _get(f"http://127.0.0.1:{port}/healthz") == 200
    assert process.poll() is None, "".join(lines)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0, "".join(lines)
