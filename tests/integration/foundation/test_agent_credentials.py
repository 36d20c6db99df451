"""The agent process says at start which node its credentials name, and warns once when the
own-node admission policy will deny its writes (a token bound to no node), instead of
leaving only a stream of refused writes to explain it."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import kubeobjects
from tests.harness.cli import wait_for_output
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.ports import free_port
from tests.harness.tokens import service_account_token


@pytest.mark.parametrize(
    ("token", "warned"),
    [
        pytest.param(service_account_token(), True, id="token-bound-to-no-node"),
        pytest.param(service_account_token(node="n1"), False, id="token-bound-to-n1"),
    ],
)
def test_the_agent_logs_its_credentials_and_warns_about_a_token_without_its_node(
    fake_apiserver: FakeApiServer, tmp_path: Path, token: str, warned: bool
) -> None:
    """Connected as node n1, the agent logs its token's binding; with a token that names no
    node it adds one warning that its writes will be denied and how to get a Node-bound token."""
    fake_apiserver.create(kubeobjects.node("n1"))
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig", token=token)
    config = tmp_path / "agent.yaml"
    config.write_text(
        f"nodeName: n1\nkubeconfig: {kubeconfig}\nmetricsBindAddress: 127.0.0.1:{free_port()}\n"
        f"stateDir: {tmp_path}\nshutdownGracePeriod: 0s\nlogFormat: json\n"
    )
    log = tmp_path / "agent.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent.cli", "agent", "--config", str(config)],
            env={**os.environ, "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": ""},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_output(process, log.read_text, "connected to cluster", 30)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text()
    (connected,) = [line for line in text.splitlines() if "connected to cluster" in line]
    assert ("bound to no node" if warned else "bound to node n1") in connected
    denied = [line for line in text.splitlines() if "denies every write" in line]
    assert len(denied) == (1 if warned else 0), text
    if warned:
        assert "--bound-object-kind Node --bound-object-name n1" in denied[0]
