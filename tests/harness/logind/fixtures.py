"""The ``logind_harness`` pytest fixture.

Import it into a conftest (``from tests.harness.logind.fixtures import logind_harness``).
It skips rather than fails where the harness cannot run (not root, no dbus-daemon or
systemd-logind, no mount namespaces), points ``DBUS_SYSTEM_BUS_ADDRESS`` at the
private bus for the test and anything it spawns, and prints logind's log tail at
teardown, which pytest shows only for failing tests.

Per-test settings go through indirect parametrization::

    @pytest.mark.parametrize("logind_harness", [{"inhibit_delay_max_sec": 1}], indirect=True)
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.logind import launch
from tests.harness.logind.bus import find_dbus_daemon
from tests.harness.logind.harness import LogindHarness
from tests.harness.logind.logind import LOGIND_CANDIDATES, find_logind


@functools.cache
def unavailable_reason() -> str | None:
    """Why the harness cannot run on this machine, or ``None`` if it can."""
    if os.geteuid() != 0:
        return "logind harness needs root (mount namespaces, systemd-logind)"
    if find_dbus_daemon() is None:
        return "logind harness needs dbus-daemon on PATH (apt-get install dbus-daemon)"
    if find_logind() is None:
        return f"logind harness needs systemd-logind at one of {LOGIND_CANDIDATES}"
    probe = subprocess.run(
        [*launch.launcher_argv(), "--probe"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if probe.returncode != 0:
        detail = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"logind harness needs private mount namespaces and bind mounts: {detail}"
    return None


@pytest.fixture
def logind_harness(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LogindHarness]:
    """A started :class:`LogindHarness`; ``DBUS_SYSTEM_BUS_ADDRESS`` points at its bus."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    options: dict[str, Any] = getattr(request, "param", None) or {}
    harness = LogindHarness(**options)
    harness.start()
    try:
        monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", harness.bus_address)
        yield harness
    finally:
        unhandled = harness.systemd1.unhandled_calls()
        print(f"--- logind harness: systemd1 calls it could not answer: {unhandled}")
        print(f"--- logind harness: logind log tail ({harness.workdir}) ---")
        print(harness.log_tail(80))
        harness.stop()
