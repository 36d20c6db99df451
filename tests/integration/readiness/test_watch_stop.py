"""Stopping the gate's watches must not stall the event loop until the next bookmark."""

from __future__ import annotations

import asyncio
import time

from agent.kube.api import KubeApi
from agent.kube.reflector import Reflector
from agent.kube.resources import DAEMON_SETS
from tests.harness.fake_apiserver import FakeApiServer


async def test_stopping_a_quiet_watch_returns_at_once() -> None:
    """Reflector.stop() on a silent watch returns well before the 30 s bookmark would arrive."""
    with FakeApiServer(bookmark_interval=30.0) as server, server.api_client() as client:
        reflector = Reflector(KubeApi(client), DAEMON_SETS, name="quiet", namespace="kube-system")
        task = asyncio.create_task(reflector.run())
        async with asyncio.timeout(10):
            await reflector.synced.wait()
        await asyncio.to_thread(server.wait_for_watches, "daemonsets", 1)
        started = time.monotonic()
        reflector.stop()
        blocked = time.monotonic() - started
        async with asyncio.timeout(10):
            await task
    assert blocked < 5.0, f"stop() blocked the event loop for {blocked:.1f}s"
