"""A swap node for integration tests: a fixture /proc and cgroup2 tree, and a real controller.

``make_swap_node`` builds a host tree (meminfo, /proc/swaps, kernel sysctls) and a cgroup v2
tree for one cgroup driver in a tmp dir, ``make_swap_node_v1`` a hybrid cgroup v1 host; the
node's facts are collected from it with the real readers, the filesystem magic being the one
thing injected (a tmp dir is not a cgroup2 or tmpfs mount). ``start_swap_agent`` wires the
real controller the way the agent does:
``build_cluster`` against the fake API server (real client, NodeState watches, EventRecorder,
NodePatcher), with the watches supervised on the test's loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.clock import SystemClock
from agent.config import AgentConfig, parse_document
from agent.daemon import build_cluster
from agent.node.facts import NodeFacts, collect_node_facts
from agent.node.metrics import NodeFactsCollector
from agent.node.paths import HostPaths
from agent.runtime.supervisor import RootTask
from agent.swap.collector import SwapAuditCollector
from agent.swap.controller import SwapController
from agent.telemetry.health import Health
from tests.harness.agent_rig import InProcessAgent
from tests.harness.cgroups import GIB, CgroupTreeBuilder, CgroupV1TreeBuilder, Driver
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree

JSON = dict[str, Any]
NODE = "node-1"


@dataclass
class SwapNode:
    host: HostTree
    cgroups: CgroupTreeBuilder

    @property
    def paths(self) -> HostPaths:
        return self.host.paths

    def facts(self) -> NodeFacts:
        return collect_node_facts(self.paths, fs_magic=self.cgroups.fs_magic)

    def swap(self, total: int, free: int | None = None) -> None:
        """Turn swap on (a 4 GiB device by default) or off (``total=0``) in the fixture /proc."""
        self.host.memory(total=16 * GIB, swap_total=total, swap_free=free)
        if total:
            self.host.swaps(("/swapfile", "file", total // 1024, 0, -2))
        else:
            self.host.swaps()


class RealNode:
    """This machine as the agent's node: the real /proc and /sys (nothing injected)."""

    paths = HostPaths()

    def facts(self) -> NodeFacts:
        return collect_node_facts(self.paths)


MakeSwapNode = Callable[..., SwapNode]


@pytest.fixture
def make_swap_node(tmp_path: Path) -> MakeSwapNode:
    def make(
        driver: Driver = "systemd",
        *,
        runtime: str = "containerd",
        swap: int = 4 * GIB,
        in_user_namespace: bool = False,
        min_free_kbytes: int = 67584,
    ) -> SwapNode:
        host = HostTree(tmp_path / "host")
        host.kernel(min_free_kbytes=min_free_kbytes)
        host.user_namespace(in_user_namespace)
        host.own_cgroup("/system.slice/kubelet-companion.service")
        node = SwapNode(host, CgroupTreeBuilder(host.paths.cgroup_root, driver, runtime))
        node.swap(swap)
        node.cgroups.system_slice()
        node.cgroups.kubepods  # noqa: B018 - creating the kubepods root is the point
        return node

    return make


@dataclass
class SwapNodeV1:
    """A hybrid cgroup v1 node (``CgroupV1TreeBuilder``: kubepods in each v1 hierarchy)."""

    host: HostTree
    cgroups: CgroupV1TreeBuilder

    @property
    def paths(self) -> HostPaths:
        return self.host.paths

    def facts(self) -> NodeFacts:
        return collect_node_facts(self.paths, fs_magic=self.cgroups.fs_magic)


MakeSwapNodeV1 = Callable[..., SwapNodeV1]


@pytest.fixture
def make_swap_node_v1(tmp_path: Path) -> MakeSwapNodeV1:
    def make(
        driver: Driver = "cgroupfs", *, hybrid: bool = True, swap: int = 4 * GIB
    ) -> SwapNodeV1:
        host = HostTree(tmp_path / "host")
        host.kernel()
        host.user_namespace(False)
        host.own_cgroup_v1(hybrid=hybrid)
        node = SwapNodeV1(host, CgroupV1TreeBuilder(host.paths.cgroup_root, driver, hybrid=hybrid))
        host.memory(total=16 * GIB, swap_total=swap)
        host.swaps(("/swapfile", "file", swap // 1024, 0, -2))
        node.cgroups.kubepods  # noqa: B018 - creating the kubepods roots is the point
        return node

    return make


@dataclass(kw_only=True)
class SwapAgent(InProcessAgent):
    controller: SwapController

    async def synced_with(self, server_predicate: Callable[[list[JSON]], bool]) -> None:
        """Wait until NodeState's pods satisfy ``server_predicate`` (the watch caught up)."""
        state = self.cluster.node_state
        await self.until(lambda: server_predicate(state.pod_list()), "NodeState caught up")


StartSwapAgent = Callable[..., Awaitable[SwapAgent]]


def node_object(name: str = NODE, swap_capacity: int | None = None) -> JSON:
    status: JSON = {"nodeInfo": {}}
    if swap_capacity is not None:
        status["nodeInfo"]["swap"] = {"capacity": swap_capacity}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
        "status": status,
    }


@pytest.fixture
async def start_swap_agent(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> AsyncIterator[StartSwapAgent]:
    """Start the swap controller for ``node`` with ``memorySwap`` settings ``swap``.

    ``loop=False`` leaves the controller's own loop off, so the test drives ``run_once``.
    """
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    agents: list[SwapAgent] = []

    async def start(
        node: SwapNode | SwapNodeV1 | RealNode,
        swap: JSON | None = None,
        *,
        loop: bool = False,
        debounce: float = 0.05,
    ) -> SwapAgent:
        if fake_apiserver.try_get("nodes", NODE) is None:
            fake_apiserver.create(node_object())
        document = {
            "nodeName": NODE,
            "kubeconfig": str(kubeconfig),
            "stateDir": str(tmp_path),
            "memorySwap": swap or {},
        }
        config = parse_document(AgentConfig, json.dumps(document), "test-config")
        cluster = await asyncio.to_thread(build_cluster, config, NODE)
        assert cluster is not None
        facts = await asyncio.to_thread(node.facts)
        registry = CollectorRegistry()
        health = Health()
        controller = SwapController(
            config=config.memory_swap,
            node_name=NODE,
            paths=node.paths,
            facts=facts,
            clock=SystemClock(),
            cluster=cluster,
            health=health,
            debounce=debounce,
        )
        registry.register(NodeFactsCollector(node.paths, facts))
        registry.register(SwapAuditCollector(lambda: controller.report, lambda: controller.stats))
        tasks = [RootTask(name="swap", run=controller.run)] if loop else []
        agent = SwapAgent(
            server=fake_apiserver,
            controller=controller,
            registry=registry,
            health=health,
            cluster=cluster,
        )
        agents.append(agent)
        await agent.start(config, [lambda _ctx: tasks], paths=node.paths, facts=facts)
        return agent

    yield start
    for agent in agents:
        await agent.shutdown()
