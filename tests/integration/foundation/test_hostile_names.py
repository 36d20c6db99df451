"""Hostile names on a terminal, end to end: names holding escape sequences, a carriage
return, a newline, NUL and a bidi override. A snapshot or report file naming objects as no
API server would is refused, with an error that shows them escaped; a file path holding them
is shown escaped in the doctor table and a log line, and exactly in JSON. (Every renderer
with such names: tests/unit/terminal.)"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path

from agent.terminaltext import printable
from tests.harness.cli import CLI, run_cli
from tests.harness.deschedulerstate import node, pod, write_snapshot_file
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kubeobjects import list_document, node_report
from tests.integration.foundation.test_json_stdout import (
    TLS_WARNING,
    insecure_kubeconfig,
)

FORGED = "all NodeReports believed"
HOSTILE = f"evil\x1b[2J\x1b[31m\r\n{FORGED}\x00\u202etxt\u200b\x7f\x9b"
"""Clears the screen, turns it red, forges a line, then hides and reverses what follows."""
IN_A_PATH = HOSTILE.replace("\x00", "")
"""The same in a directory name (a path cannot hold NUL)."""
SGR = re.compile(r"\x1b\[[0-9;]*m")
"""The colours the console log renderer itself adds on a terminal."""
POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 60}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
"""


def unsafe(text: str) -> list[str]:
    """What a terminal would act on rather than show: every non-printable character but the
    line ends."""
    return [char for char in text if not char.isprintable() and char != "\n"]


def no_forged_line(text: str) -> bool:
    return not any(line.lstrip().startswith(FORGED) for line in text.splitlines())


def _assert_refused_escaped(result: subprocess.CompletedProcess[str]) -> None:
    """Exit 2, nothing on stdout, and stderr with no control character and no forged line."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert unsafe(result.stderr) == []
    assert no_forged_line(result.stderr)


def test_offline_plan_refuses_a_hostile_report_name_and_shows_it_escaped(tmp_path: Path) -> None:
    """A NodeReport file naming a report as no API server would is exit 2; the error quotes
    the name escaped, so stderr holds no control character and no forged line."""
    items = [node("n1")]
    report = node_report(HOSTILE, "2026-06-01T00:00:00Z", node_name="n1", node_uid="u")
    write_snapshot_file(tmp_path / "snapshot.json", list_document(*items))
    write_snapshot_file(tmp_path / "reports.json", list_document(report))
    (tmp_path / "policy.yaml").write_text(POLICY)
    result = run_cli(
        "descheduler", "plan",
        "--snapshot", str(tmp_path / "snapshot.json"),
        "--node-reports", str(tmp_path / "reports.json"),
        "--policy-config-file", str(tmp_path / "policy.yaml"),
        "--captured-at", "2026-06-01T00:00:00Z",
    )  # fmt: skip
    _assert_refused_escaped(result)
    assert "items[0].metadata.name" in result.stderr
    assert "evil\\\\x1b[2J" in result.stderr


def test_offline_plan_refuses_hostile_names_and_says_so_escaped(tmp_path: Path) -> None:
    """A snapshot holding names the API server would refuse is exit 2 (nothing planned), and
    the error about them on stderr holds no control character and no forged line."""
    items = [node(HOSTILE), node("other"), pod(HOSTILE, HOSTILE)]
    snapshot = tmp_path / "snapshot.json"
    write_snapshot_file(snapshot, list_document(*items))
    (tmp_path / "policy.yaml").write_text(POLICY)
    result = run_cli(
        "descheduler", "plan",
        "--snapshot", str(snapshot),
        "--policy-config-file", str(tmp_path / "policy.yaml"),
        "--captured-at", "2026-06-01T00:00:00Z",
    )  # fmt: skip
    _assert_refused_escaped(result)
    assert "must be a DNS subdomain" in result.stderr


def _doctor_config(server: FakeApiServer, tmp_path: Path) -> tuple[Path, Path]:
    """A config whose kubeconfig lies in a directory named like the attack; TLS unverified,
    so its path is in a logged warning (and in doctor's cluster section)."""
    directory = tmp_path / IN_A_PATH
    directory.mkdir()
    kubeconfig = insecure_kubeconfig(server, directory / "kubeconfig")
    config = tmp_path / "agent.yaml"
    config.write_text(json.dumps({"nodeName": "n1", "kubeconfig": str(kubeconfig)}))
    return config, kubeconfig


def test_a_hostile_path_in_a_json_log_line_and_the_doctor_table(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Piped, the log line is JSON on stderr: printable ASCII, one line, the path exact. The
    doctor table on stdout shows the path escaped."""
    config, kubeconfig = _doctor_config(fake_apiserver, tmp_path)
    result = run_cli("doctor", "--config", str(config))
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if TLS_WARNING in line]
    assert all(" " <= char <= "~" for char in result.stderr.replace("\n", ""))
    assert json.loads(line)["source"] == f"kubeconfig {kubeconfig}"
    assert unsafe(result.stdout) == []
    assert printable(str(kubeconfig)) in result.stdout
    assert no_forged_line(result.stdout)


def test_a_hostile_path_in_a_console_log_line_on_a_terminal(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """With stderr on a terminal the log line is the console's: coloured, and the path in it
    escaped; nothing but the renderer's own colours is a control sequence."""
    config, kubeconfig = _doctor_config(fake_apiserver, tmp_path)
    controller, terminal = pty.openpty()
    environment = {**os.environ, "KUBECONFIG": "", "HOME": "/nonexistent"}
    with subprocess.Popen(
        [*CLI, "doctor", "--json", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=environment,
        text=True,
    ) as process:
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the process closed the terminal's last descriptor
                break
            if not chunk:
                break
            chunks.append(chunk)
        stdout = process.stdout.read() if process.stdout else ""
    os.close(controller)
    assert process.returncode == 0
    json.loads(stdout)
    seen = SGR.sub("", b"".join(chunks).decode().replace("\r\n", "\n"))
    assert TLS_WARNING in seen
    assert unsafe(seen) == []
    assert printable(f"kubeconfig {kubeconfig}") in seen
    assert no_forged_line(seen)
