"""A real readiness gate, wired as the agent wires it, against the fake API server over HTTP.

``start_gate`` builds the cluster context with the entrypoint's own ``build_cluster`` (a real
kubeconfig, the real client, NodeState, EventRecorder and NodePatcher), and starts NodeState's
watches and the capability's ``root_tasks`` under a real ``Supervisor``
(``InProcessAgent.start``) on the test's event loop until the test ends.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.config import AgentConfig, parse_document
from agent.daemon import build_cluster
from agent.node.facts import collect_node_facts
from agent.node.paths import HostPaths
from agent.readiness.controller import root_tasks
from agent.telemetry.health import Health
from tests.harness.agent_rig import InProcessAgent
from tests.harness.fake_apiserver import FakeApiServer

JSON = dict[str, Any]


GateAgent = InProcessAgent
"""The readiness rig adds nothing of its own to the shared in-process agent."""


StartGate = Callable[..., Awaitable[GateAgent]]


@pytest.fixture
def facts_paths() -> HostPaths:
    return HostPaths()


@pytest.fixture
async def start_gate(
    fake_apiserver: FakeApiServer, tmp_path: Path, facts_paths: HostPaths
) -> AsyncIterator[StartGate]:
    """Start the gate for a node (``readiness`` is the config section as a dict)."""
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    facts = await asyncio.to_thread(collect_node_facts, facts_paths)
    agents: list[GateAgent] = []

    async def start(readiness: JSON | None = None, node_name: str = "node-1") -> GateAgent:
        document = {
            "nodeName": node_name,
            "kubeconfig": str(kubeconfig),
            "stateDir": str(tmp_path),
            "readiness": readiness or {},
        }
        config = parse_document(AgentConfig, json.dumps(document), "test-config")
        cluster = await asyncio.to_thread(build_cluster, config, node_name)
        assert cluster is not None
        agent = GateAgent(
            server=fake_apiserver,
            registry=CollectorRegistry(),
            health=Health(),
            cluster=cluster,
        )
        agents.append(agent)
        await agent.start(config, [root_tasks], paths=facts_paths, facts=facts)
        return agent

    yield start
    for agent in agents:
        await agent.shutdown()
