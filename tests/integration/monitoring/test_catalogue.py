"""The metric catalogue the dashboard test checks queries against is the real one: the
families the agent (wired by ``agent.daemon.assemble`` in cluster mode) and the descheduler
(``run_descheduler``) register are exactly the catalogue's."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client import CollectorRegistry

from agent.clock import SystemClock
from agent.config import AgentConfig, parse_document
from agent.daemon import assemble, build_cluster
from agent.kube.api import KubeApi
from agent.kube.connection import connect
from agent.node.facts import collect_node_facts
from agent.node.metrics import NodeFactsCollector
from agent.node.paths import HostPaths
from agent.runtime.context import AgentContext
from agent.telemetry.health import Health
from agent.telemetry.metrics import new_registry
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import run_live
from tests.unit.monitoring import catalogue
from tests.unit.monitoring.catalogue import SERIES_SUFFIXES

ONLY_ONCE_LIFTED = {"kubelet_companion_readiness_gate_wait_seconds"}
"""Exported only once this agent lifted its readiness gate (never a made-up zero)."""


def _exposed(registry: CollectorRegistry) -> set[str]:
    """Every series name the registry's families can expose (by their type's suffixes)."""
    return {
        family.name + suffix
        for family in registry.collect()
        for suffix, _ in SERIES_SUFFIXES.get(family.type, (("", ()),))
    }


def test_the_agents_catalogue_is_what_the_wired_agent_registers(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Every family of an agent assembled in cluster mode (all capabilities) is in the
    catalogue, and every catalogue series is one the agent registers."""
    document = {
        "nodeName": "node-1",
        "kubeconfig": str(fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")),
        "stateDir": str(tmp_path),
        "shutdown": {"logindDropInPath": str(tmp_path / "99.conf")},
    }
    config = parse_document(AgentConfig, json.dumps(document), "test-config")
    cluster = build_cluster(config, "node-1")
    assert cluster is not None
    try:
        registry = new_registry("agent")
        facts = collect_node_facts(HostPaths())
        registry.register(NodeFactsCollector(HostPaths(), facts))  # as agent.daemon._start
        context = AgentContext(
            config=config,
            node_name="node-1",
            paths=HostPaths(),
            registry=registry,
            health=Health(),
            clock=SystemClock(),
            facts=facts,
            cluster=cluster,
        )
        assemble(context)
        exposed = _exposed(registry)
    finally:
        cluster.kube.close()
    known = catalogue.agent()
    assert set(known) - exposed == ONLY_ONCE_LIFTED
    families = {family.name for family in registry.collect()}
    assert all(any(name.startswith(family) for name in known) for family in families)


async def test_the_deschedulers_catalogue_is_what_run_descheduler_registers(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Every family a one-shot descheduler run registers is in the catalogue, and every
    catalogue series is one it registers."""
    fake_apiserver.kubelet("n1")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        'apiVersion: "descheduler/v1alpha2"\nkind: "DeschedulerPolicy"\nprofiles:\n'
        "  - name: p\n    plugins:\n      balance:\n        enabled: [RemoveDuplicates]\n"
    )
    registry = new_registry("descheduler")
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    connection = connect(str(kubeconfig))
    assert connection is not None
    api = KubeApi(connection.api_client, request_timeout=5.0)
    try:
        code = await run_live(policy, api, registry=registry)
    finally:
        api.close()
    assert code == 0
    known = catalogue.descheduler()
    exposed = _exposed(registry)
    assert set(known) <= exposed
    families = {family.name for family in registry.collect()}
    assert all(any(name.startswith(family) for name in known) for family in families)
