"""The NodeReport rig: the real writer over HTTP to the fake API server with our CRD registered.

``report_rig`` builds a ``ReportController`` exactly as ``root_tasks`` does, except for the
clock (a fake one the test moves), the host paths (a fixture ``/proc`` and cgroup v2 tree
whose counters the test rewrites) and the pods (this node's, read from the fake API server
where NodeState would hold them), so a test drives samples and writes one step at a time,
with no sleeps.
``start_agent`` instead runs capabilities under the real ``Supervisor``, as the agent does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.config import AgentConfig, parse_document
from agent.daemon import Capability, build_cluster
from agent.kube.client import AsyncKube
from agent.kube.reportwriter import NodeReportWriter
from agent.kube.session import open_api
from agent.node.facts import collect_node_facts
from agent.node.paths import HostPaths
from agent.report.controller import ReportController
from agent.report.metrics import ReportMetrics
from agent.report.sampling import NodeSampler
from agent.runtime.status import StatusBoard
from agent.telemetry.health import Health
from tests.harness.agent_rig import InProcessAgent
from tests.harness.cgroups import CgroupTreeBuilder
from tests.harness.clock import HandClock
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree
from tests.harness.nodereport import NodeProc, register_crd

JSON = dict[str, Any]
NODE = "node-1"
REPORT_PATH = f"/apis/kubelet-companion.io/v1alpha1/nodereports/{NODE}"


def agent_config(server: FakeApiServer, tmp_path: Path, **report: Any) -> AgentConfig:
    document = {
        "nodeName": NODE,
        "kubeconfig": str(server.write_kubeconfig(tmp_path / "kubeconfig")),
        "stateDir": str(tmp_path / "state"),
        "report": report,
    }
    return parse_document(AgentConfig, json.dumps(document), "test config")


@dataclass
class ReportRig:
    server: FakeApiServer
    controller: ReportController
    clock: HandClock
    proc: NodeProc
    board: StatusBoard
    kube: AsyncKube
    cgroups: CgroupTreeBuilder
    """The node's kubepods tree (cgroup v2, systemd driver): pod cgroups the sampler reads."""

    def report(self) -> JSON:
        return self.server.get("nodereports", NODE)

    def status_writes(self, *, ok: bool = True) -> list[Any]:
        """Status PATCHes at the server (``ok``: answered 2xx; else every attempt)."""
        return [
            request
            for request in self.server.requests("PATCH", f"{REPORT_PATH}/status")
            if not ok or (request.status is not None and request.status < 300)
        ]

    async def step(self, seconds: float = 5.0, **values: float) -> object:
        """Move time, take a sample with ``values``, let the writer decide; return its reason."""
        self.proc.set(**values)  # type: ignore[arg-type]
        self.clock.advance(seconds)
        await self.controller.sample_once()
        return await self.controller.write_if_due()


MakeRig = Callable[..., Awaitable[ReportRig]]


@pytest.fixture
def report_server(fake_apiserver: FakeApiServer) -> FakeApiServer:
    """The fake API server with the NodeReport CRD and a registered Node."""
    register_crd(fake_apiserver)
    fake_apiserver.kubelet(NODE)
    return fake_apiserver


@pytest.fixture
async def report_rig(report_server: FakeApiServer, tmp_path: Path) -> AsyncIterator[MakeRig]:
    kubes: list[AsyncKube] = []

    async def make(**report: Any) -> ReportRig:
        config = agent_config(report_server, tmp_path, **report)
        api = open_api(config)
        assert api is not None
        kube = AsyncKube(api)
        kubes.append(kube)
        host = HostTree(tmp_path / "host")
        host.kernel()
        proc = NodeProc(host)
        cgroups = CgroupTreeBuilder(host.paths.cgroup_root, "systemd")
        clock = HandClock(epoch=1_790_000_000.0)
        board = StatusBoard()
        controller = ReportController(
            config=config.report,
            boot_id="boot-1",
            source=NodeSampler(host.paths, config.memory_swap, clock.monotonic),
            sink=NodeReportWriter(kube, NODE),
            board=board,
            clock=clock,
            metrics=ReportMetrics(CollectorRegistry()),
            record_path=config.report_state_file,
            random_fraction=lambda: 0.0,
            node=lambda: report_server.try_get("nodes", NODE),  # what NodeState would hold
            pods=lambda: report_server.list("pods", field_selector=f"spec.nodeName={NODE}"),
        )
        return ReportRig(report_server, controller, clock, proc, board, kube, cgroups)

    yield make
    for kube in kubes:
        kube.close()


StartAgent = Callable[..., Awaitable[InProcessAgent]]


@pytest.fixture
async def start_agent(report_server: FakeApiServer, tmp_path: Path) -> AsyncIterator[StartAgent]:
    """Run ``capabilities`` under the real Supervisor, wired as ``agent.daemon`` does."""
    facts = await asyncio.to_thread(collect_node_facts, HostPaths())
    agents: list[InProcessAgent] = []

    async def start(
        capabilities: Sequence[Capability], *, host: HostTree, **sections: Any
    ) -> InProcessAgent:
        document = {
            "nodeName": NODE,
            "kubeconfig": str(report_server.write_kubeconfig(tmp_path / "kubeconfig")),
            "stateDir": str(tmp_path / "state"),
            "hostPaths": {"proc": str(host.paths.proc), "sys": str(host.paths.sys)},
            **sections,
        }
        config = parse_document(AgentConfig, json.dumps(document), "test config")
        cluster = await asyncio.to_thread(build_cluster, config, NODE)
        assert cluster is not None
        agent = InProcessAgent(
            server=report_server, registry=CollectorRegistry(), health=Health(), cluster=cluster
        )
        agents.append(agent)
        await agent.start(config, capabilities, paths=host.paths, facts=facts)
        return agent

    yield start
    for agent in agents:
        if agent.task is not None and not agent.task.done():
            await agent.shutdown()
