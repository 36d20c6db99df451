"""``LogindHarness``: a real systemd-logind on a private bus, driven from tests.

The product's graceful-shutdown logic is only as good as its understanding of
logind's inhibitor protocol, which mocks tend to get subtly wrong (fd semantics,
PrepareForShutdown ordering, InhibitDelayMaxSec, state kept across restarts).
This facade wires together the private bus, the systemd1 stand-in and the isolated
logind process, and gives tests one synchronous, thread-safe object to drive and
observe them. Nothing it does can power off, reboot or alter the host.
"""

from __future__ import annotations

import atexit
import shutil
import signal
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests.harness.logind.bus import PrivateSystemBus
from tests.harness.logind.login1_client import Inhibitor, Login1Client, Login1Signal
from tests.harness.logind.logind import TERMINATING_SIGNALS, LogindProcess
from tests.harness.logind.loop_thread import LoopThread
from tests.harness.logind.systemd1 import Systemd1StandIn
from tests.harness.startstop import StartsAndStops
from tests.harness.waiting import WaitTimedOut, wait_until_blocking

LOGIND_UNIT = "systemd-logind.service"
T = TypeVar("T")
_LIVE: weakref.WeakSet[LogindHarness] = weakref.WeakSet()


class LogindHarness(StartsAndStops):
    """Private dbus-daemon + systemd1 stand-in + isolated systemd-logind.

    Usage::

        with LogindHarness() as h:  # or the ``logind_harness`` pytest fixture
            h.power_off()
            h.wait_for_prepare_for_shutdown(True)
    """

    def __init__(
        self,
        *,
        inhibit_delay_max_sec: float = 5,
        log_level: str = "info",
        startup_timeout: float = 10,
        base_dir: Path | None = None,
    ) -> None:
        self._inhibit_delay_max_sec = inhibit_delay_max_sec
        self._log_level = log_level
        self._startup_timeout = startup_timeout
        self._base_dir = base_dir
        self._lock = threading.RLock()
        self._workdir: Path | None = None
        self._bus: PrivateSystemBus | None = None
        self._loop = LoopThread("logind-harness-loop")
        self._systemd1: Systemd1StandIn | None = None
        self._client: Login1Client | None = None
        self._logind: LogindProcess | None = None
        self._login1_owner: str | None = None

    # ---- lifecycle -----------------------------------------------------------------

    def start(self, inhibit_delay_max_sec: float | None = None) -> LogindHarness:
        """Bring everything up; returns once logind owns ``org.freedesktop.login1``."""
        with self._lock:
            if self._workdir is not None:
                raise RuntimeError("LogindHarness already started")
            if inhibit_delay_max_sec is not None:
                self._inhibit_delay_max_sec = inhibit_delay_max_sec
            self._workdir = Path(tempfile.mkdtemp(prefix="logind-harness-", dir=self._base_dir))
            _LIVE.add(self)
            try:
                self._workdir.chmod(0o755)
                # Children are spawned on the loop thread so that their PDEATHSIG parent
                # lives exactly as long as the harness (see launch.py).
                self._loop.start()
                self._bus = PrivateSystemBus(self._workdir)
                self._loop.call(self._bus.start, self._startup_timeout + 1)
                self._systemd1 = Systemd1StandIn(self._loop, self.bus_address, self._pid_for_unit)
                self._systemd1.start(self._startup_timeout)
                self._client = Login1Client(self._loop, self.bus_address)
                self._client.connect(self._startup_timeout)
                self._logind = LogindProcess(self._workdir, self.bus_address, self._log_level)
                self._logind.write_base_config(self._inhibit_delay_max_sec)
                self.start_logind()
            except BaseException:
                self.stop()
                raise
        return self

    def stop(self) -> None:
        """Kill logind and dbus-daemon, stop the loop, delete the temp dir. Idempotent."""
        with self._lock:
            # Every step runs even if an earlier one failed; the first failure is re-raised.
            steps: list[Callable[[], object]] = [
                *([self._logind.stop] if self._logind is not None else []),
                *([self._client.close] if self._client is not None else []),
                *([self._systemd1.stop] if self._systemd1 is not None else []),
                *([self._bus.stop] if self._bus is not None else []),
                self._loop.stop,
            ]
            errors: list[Exception] = []
            for step in steps:
                try:
                    step()
                except Exception as exc:  # noqa: BLE001 - collected and re-raised below
                    errors.append(exc)
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
            self._bus = None
            self._client = None
            self._logind = None
            _LIVE.discard(self)
        if errors:
            raise errors[0]

    # ---- where things are ------------------------------------------------------------

    @property
    def bus_address(self) -> str:
        """``unix:path=...`` of the private system bus (also DBUS_SYSTEM_BUS_ADDRESS in tests)."""
        return self._require(self._bus).address

    @property
    def workdir(self) -> Path:
        return self._require(self._workdir)

    @property
    def runtime_dir(self) -> Path:
        """Host path that logind sees as ``/run/systemd`` (``inhibit/`` holds the locks)."""
        return self._require(self._logind).runtime_dir

    @property
    def dropin_dir(self) -> Path:
        """Host path that logind reads as ``/etc/systemd/logind.conf.d``."""
        return self._require(self._logind).dropin_dir

    @property
    def logind_pid(self) -> int | None:
        """pid of the running logind (``None`` while it is down)."""
        return self._logind.pid if self._logind is not None else None

    @property
    def systemd1(self) -> Systemd1StandIn:
        """The ``org.freedesktop.systemd1`` stand-in: its call record and knobs."""
        return self._require(self._systemd1)

    # ---- logind process --------------------------------------------------------------

    def start_logind(self, timeout: float | None = None) -> int:
        """Start logind (again) and wait until it owns ``org.freedesktop.login1``; return pid."""
        logind, client = self._require(self._logind), self._require(self._client)
        timeout = self._startup_timeout if timeout is None else timeout
        with self._lock:
            pid = self._loop.call(logind.start, timeout)
            try:
                self._login1_owner = client.wait_for_owner(
                    timeout,
                    not_owner=self._login1_owner,
                    still_alive=lambda: logind.pid is not None,
                )
            except (WaitTimedOut, RuntimeError) as exc:
                logind.stop()
                raise RuntimeError(f"{exc}\n--- logind log tail ---\n{self.log_tail()}") from exc
        return pid

    def kill_logind(self, sig: int = signal.SIGTERM, timeout: float = 5) -> None:
        """Send ``sig`` to logind; for terminating signals also wait (bounded) for it to exit."""
        logind = self._require(self._logind)
        with self._lock:
            logind.send_signal(sig)
            if sig in TERMINATING_SIGNALS:
                try:
                    logind.wait(timeout)
                except subprocess.TimeoutExpired:
                    logind.stop()

    def restart_logind(self, keep_inhibit_state: bool = True) -> int:
        """SIGTERM logind and start it again; without kept state its inhibitor files are wiped."""
        with self._lock:
            if self.logind_pid is not None:
                self.kill_logind(signal.SIGTERM)
            if not keep_inhibit_state:
                self._require(self._logind).clear_inhibit_state()
            return self.start_logind()

    def reload_logind(self) -> None:
        """SIGHUP logind directly (the product goes through systemd1 ``KillUnit`` instead)."""
        self.kill_logind(signal.SIGHUP)

    def set_inhibit_delay_max_sec(self, seconds: float, wait_timeout: float = 5) -> None:
        """Rewrite the base config, SIGHUP logind and wait until the property shows it."""
        self._require(self._logind).write_base_config(seconds)
        self._inhibit_delay_max_sec = seconds
        self.reload_logind()
        expected = round(seconds * 1_000_000)
        self.wait_for_inhibit_delay_max_usec(expected, wait_timeout)

    def wait_for_inhibit_delay_max_usec(self, expected: int, timeout: float = 5) -> None:
        """Poll ``InhibitDelayMaxUSec`` until it equals ``expected``."""
        wait_until_blocking(
            lambda: self.inhibit_delay_max_usec() == expected,
            lambda: f"InhibitDelayMaxUSec {expected}, still {self.inhibit_delay_max_usec()}",
            timeout,
            interval=0.05,
        )

    def logind_log(self) -> str:
        """Everything logind wrote to stdout/stderr, across restarts."""
        return self._logind.log_text() if self._logind is not None else ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.logind_log().splitlines()[-lines:])

    def write_dropin(self, name: str, text: str) -> Path:
        """Write ``<dropin_dir>/<name>`` (takes effect on the next reload)."""
        path = self.dropin_dir / name
        path.write_text(text)
        return path

    # ---- talking to logind -----------------------------------------------------------

    def power_off(self, interactive: bool = False, timeout: float = 5) -> None:
        """``Manager.PowerOff(interactive)`` from the harness's connection; returns on accept."""
        self._require(self._client).call_login1("PowerOff", "b", [interactive], timeout)

    def list_inhibitors(self, timeout: float = 5) -> list[Inhibitor]:
        """``ListInhibitors()`` as (what, who, why, mode, uid, pid) tuples."""
        body = self._require(self._client).call_login1("ListInhibitors", timeout=timeout)
        return [
            (str(w), str(who), str(why), str(m), int(u), int(p)) for w, who, why, m, u, p in body[0]
        ]

    def inhibit_delay_max_usec(self, timeout: float = 5) -> int:
        return int(self._require(self._client).get_property("InhibitDelayMaxUSec", timeout))

    def login1_signals(self, member: str | None = None) -> list[Login1Signal]:
        """Every ``org.freedesktop.login1.Manager`` signal seen, oldest first."""
        return self._require(self._client).signals(member)

    def prepare_for_shutdown_signals(self) -> list[tuple[bool, float]]:
        """``(value, time.monotonic())`` of each PrepareForShutdown seen, oldest first."""
        return [(bool(s.args[0]), s.time) for s in self.login1_signals("PrepareForShutdown")]

    def wait_for_prepare_for_shutdown(
        self, value: bool, timeout: float = 5, *, since: float | None = None
    ) -> float:
        """Block until PrepareForShutdown(``value``) was seen; return when it arrived."""
        record = self._require(self._client).wait_for_signal(
            "PrepareForShutdown", lambda s: bool(s.args[0]) is value, timeout, since=since
        )
        return record.time

    async def wait_for_prepare_for_shutdown_async(
        self,
        value: bool,
        timeout: float = 5,  # a worker thread does the bounded wait
        *,
        since: float | None = None,
    ) -> float:
        """:meth:`wait_for_prepare_for_shutdown` without blocking the caller's event loop."""
        record = await self._require(self._client).wait_for_signal_async(
            "PrepareForShutdown", lambda s: bool(s.args[0]) is value, timeout, since=since
        )
        return record.time

    # ---- internals -------------------------------------------------------------------

    def _pid_for_unit(self, unit: str) -> int | None:
        return self.logind_pid if unit == LOGIND_UNIT else None

    @staticmethod
    def _require(value: T | None) -> T:
        if value is None:
            raise RuntimeError("LogindHarness is not started")
        return value


@atexit.register
def _stop_leftovers() -> None:
    """Last resort: never leave logind/dbus-daemon behind when the interpreter exits."""
    for harness in list(_LIVE):
        harness.stop()
