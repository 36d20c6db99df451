"""An agent running in the test's own event loop, and what tests ask of it.

Capability rigs (readiness, swap, report) build the cluster context with the entrypoint's
own ``build_cluster``, make one of these and ``start`` it: the agent context and the real
Supervisor wired as ``agent.daemon`` wires them, running as ``task``. The test then has
metrics from its registry, bounded waits, and a staged stop that closes the API client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from agent.clock import SystemClock
from agent.config import AgentConfig
from agent.daemon import Capability, assemble
from agent.node.facts import NodeFacts
from agent.node.paths import HostPaths
from agent.runtime.context import AgentContext, KubeContext
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

    async def start(
        self,
        config: AgentConfig,
        capabilities: Sequence[Capability],
        *,
        paths: HostPaths,
        facts: NodeFacts,
    ) -> None:
        """Run NodeState's watches and ``capabilities`` under the real Supervisor, as
        ``agent.daemon`` does (system clock, 5 s stop timeout), until every watch synced."""
        ctx = AgentContext(
            config=config,
            node_name=config.node_name,
            paths=paths,
            registry=self.registry,
            health=self.health,
            clock=SystemClock(),
            facts=facts,
            cluster=self.cluster,
        )
        supervisor = assemble(ctx, capabilities, stop_timeout=5)
        self.task = asyncio.create_task(supervisor.run(self.stop))
        await self.until(lambda: self.health.readiness().ok, "every watch synced")

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
