"""The one call we make to systemd: ask it to SIGHUP logind, so logind re-reads its config.

kubelet does the same (``KillUnit("systemd-logind.service", "all", SIGHUP)``); going through
systemd rather than ``kill(2)`` works from a container that cannot see logind's pid.
"""

from __future__ import annotations

import signal

from dbus_fast.aio import MessageBus

from agent.logind.bus import call

SYSTEMD1 = "org.freedesktop.systemd1"
SYSTEMD1_PATH = "/org/freedesktop/systemd1"
SYSTEMD1_MANAGER = "org.freedesktop.systemd1.Manager"
LOGIND_UNIT = "systemd-logind.service"


async def reload_logind(bus: MessageBus, timeout: float) -> None:
    """``KillUnit(systemd-logind.service, all, SIGHUP)``; the reload itself is asynchronous."""
    await call(
        bus,
        destination=SYSTEMD1,
        path=SYSTEMD1_PATH,
        interface=SYSTEMD1_MANAGER,
        member="KillUnit",
        signature="ssi",
        body=[LOGIND_UNIT, "all", int(signal.SIGHUP)],
        timeout=timeout,
    )
