"""An agent running in the test's own event loop, and what tests ask of it.

Capability rigs (readiness, swap) build the context with the entrypoint's own wiring, start
the supervisor as ``task`` and hand the test one of these: metrics from its registry,
bounded waits, and a staged stop that closes the API client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from agent.runtime.context import KubeContext
from agent.telemetry.health import Health
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.waiting import wait_until


@dataclass(kw_only=True)
class InProcessAgent:
    server: FakeApiServer
    registry: CollectorRegistry
    health: Health
    cluster: KubeContext
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def metric(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)

    async def until(
        self, predicate: Callable[[], object], what: str, timeout: float = 10.0
    ) -> None:
        await wait_until(predicate, what, timeout)

    async def shutdown(self) -> None:
        self.stop.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, timeout=15)
        self.cluster.kube.close()
