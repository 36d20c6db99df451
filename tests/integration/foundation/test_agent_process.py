"""The agent process in node-only mode: metrics once ready, clean exit on SIGINT/SIGTERM."""

import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.harness.cli import wait_for_output
from tests.harness.localhttp import get_when_ok
from tests.harness.ports import free_port
from tests.harness.waiting import wait_until_blocking


def _catches(status: Path, signum: int) -> bool:
    for line in status.read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_node_only_agent_serves_facts_and_exits_0(tmp_path: Path, signum: signal.Signals) -> None:
    """Without a cluster the agent serves build info and node facts, then exits 0 on a signal."""
    port = free_port()
    config = tmp_path / "agent.yaml"
    # Shutdown off: this test is about node facts, and /readyz waits for a logind lock else.
    config.write_text(
        f"metricsBindAddress: 127.0.0.1:{port}\nstateDir: {tmp_path}\nshutdownGracePeriod: 0s\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "agent", "--config", str(config)],
        env={**os.environ, "KUBECONFIG": "", "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": ""},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # Node facts are collected after the listener starts: /readyz says when they are in
        # (get_when_ok waits through its 503s until it is 200).
        ready = get_when_ok(f"http://127.0.0.1:{port}/readyz", 30)
        assert ready.startswith("ok")
        body = get_when_ok(f"http://127.0.0.1:{port}/metrics", 10)
        for series in (
            "kubelet_companion_build_info",
            "machine_swap_bytes",
            "node_swap_usage_bytes",
            "kubelet_companion_cgroup_mode",
            "kubelet_companion_tmpfs_noswap_supported",
        ):
            assert series in body
        process.send_signal(signum)
        output, _ = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, output
    assert "node-only mode" in output
    assert '"node":' in output


def test_sigterm_during_start_up_exits_0(tmp_path: Path) -> None:
    """A stop request while the agent is still starting is a clean exit, not a kill."""
    config = tmp_path / "agent.yaml"
    config.write_text(f"metricsBindAddress: 127.0.0.1:{free_port()}\nstateDir: {tmp_path}\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "agent", "--config", str(config)],
        env={**os.environ, "KUBECONFIG": "", "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": ""},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # Signal as soon as the CLI has a SIGTERM handler: the agent is still importing and
    # starting then, before its event loop takes the signal over.
    status = Path(f"/proc/{process.pid}/status")
    wait_until_blocking(
        lambda: _catches(status, signal.SIGTERM), "a SIGTERM handler", 20, interval=0.001
    )
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=20)
    assert process.returncode == 0, output


def test_an_unreadable_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    """An explicit kubeconfig that cannot be loaded exits 2 with a message (logged, so on
    stderr), no traceback."""
    config = tmp_path / "agent.yaml"
    config.write_text(f"metricsBindAddress: 127.0.0.1:{free_port()}\nstateDir: {tmp_path}\n")
    result = subprocess.run(
        [sys.executable, "-m", "agent.cli", "agent", "--config", str(config)],
        env={**os.environ, "KUBECONFIG": str(tmp_path / "missing"), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "cannot use the configured kubeconfig" in result.stderr
    assert result.stdout == ""  # logs are on stderr, where journald and kubectl logs read them


def test_with_the_default_shutdown_and_no_logind_the_agent_stays_up(tmp_path: Path) -> None:
    """Shutdown is on by default; without a system bus the agent says so and stays healthy."""
    port = free_port()
    config = tmp_path / "agent.yaml"
    config.write_text(f"metricsBindAddress: 127.0.0.1:{port}\nstateDir: {tmp_path}\n")
    log = tmp_path / "agent.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent.cli", "agent", "--config", str(config)],
            env={
                **os.environ,
                "KUBECONFIG": "",
                "HOME": str(tmp_path),
                "KUBERNETES_SERVICE_HOST": "",
                "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={tmp_path}/no-bus",
            },
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_output(process, log.read_text, "logind unavailable", 30)
        assert get_when_ok(f"http://127.0.0.1:{port}/healthz", 10) == "ok\n"
        verbose = urllib.request.Request(f"http://127.0.0.1:{port}/readyz?verbose")
        try:
            urllib.request.urlopen(verbose, timeout=5)  # noqa: S310 - loopback
        except urllib.error.HTTPError as error:
            readiness = error.read().decode()
        else:  # pragma: no cover - a failure message
            pytest.fail("/readyz must fail while the shutdown lock cannot be taken")
        assert "[-]logind-lock" in readiness
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, log.read_text()
