"""A throw-away ``dbus-daemon`` acting as the system bus for one harness.

systemd-logind only talks to "the system bus", and there is none in a container (or
we must not use the host's). A private daemon with a permissive policy lets logind,
the systemd1 stand-in, the tests and the product under test all meet without any
policy files, and unix fd passing must be allowed because logind's ``Inhibit()``
returns the lock as a file descriptor.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from xml.sax.saxutils import escape

from tests.harness.childprocess import stop_process
from tests.harness.logind import launch

SOCKET_NAME = "system_bus_socket"

_CONFIG_TEMPLATE = """<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow eavesdrop="true"/>
  </policy>
  <limit name="max_incoming_unix_fds">1024</limit>
  <limit name="max_outgoing_unix_fds">1024</limit>
  <limit name="max_connections_per_user">1024</limit>
  <limit name="reply_timeout">60000</limit>
</busconfig>
"""


def find_dbus_daemon() -> str | None:
    return shutil.which("dbus-daemon")


class PrivateSystemBus:
    """Owns one ``dbus-daemon --nofork`` process listening on ``<workdir>/system_bus_socket``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.socket_path = workdir / SOCKET_NAME
        self.config_path = workdir / "system-bus.conf"
        self.log_path = workdir / "dbus-daemon.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"unix:path={self.socket_path}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout: float = 5) -> None:
        """Spawn the daemon and wait until it listens.

        The calling thread becomes the daemon's PDEATHSIG parent: call this from a
        thread that lives as long as the bus should.
        """
        daemon = find_dbus_daemon()
        if daemon is None:
            raise FileNotFoundError("dbus-daemon not found on PATH")
        self.config_path.write_text(_CONFIG_TEMPLATE.format(socket=escape(str(self.socket_path))))
        with self.log_path.open("ab") as log:
            argv = [daemon, f"--config-file={self.config_path}", "--nofork", "--print-address"]
            self._process = subprocess.Popen(
                launch.command(argv, die_with_parent_pid=os.getpid()),
                stdout=subprocess.PIPE,
                stderr=log,
                stdin=subprocess.DEVNULL,
                cwd="/",
            )
        self._wait_for_address(timeout)

    def _wait_for_address(self, timeout: float) -> None:
        """dbus-daemon prints its address once the socket is listening."""
        assert self._process is not None
        assert self._process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._process.stdout], [], [], 0.05)
            if ready:
                line = self._process.stdout.readline()
                if line.startswith(b"unix:"):
                    return
            if self._process.poll() is not None:
                break
        log = self.log_path.read_text(errors="replace")
        self.stop()
        raise RuntimeError(f"dbus-daemon did not come up within {timeout} s:\n{log}")

    def stop(self, timeout: float = 5) -> None:
        """Terminate the daemon (SIGKILL after ``timeout``). Idempotent."""
        process, self._process = self._process, None
        if process is None:
            return
        stop_process(process, timeout)
        if process.stdout is not None:
            process.stdout.close()
