"""The ``agent`` process: wire adapters and capabilities, run them, stop them in stages.

Start-up order matters for the probes: the telemetry listener comes up first (so a slow
API server never hides ``/healthz``), node facts are sampled before ``/readyz`` turns
green, and the watches of NodeState gate readiness in cluster mode.
"""

from __future__ import annotations

import asyncio
import signal
import socket

import structlog

from agent.config import AgentConfig
from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.connection import connect
from agent.kube.events import EventRecorder
from agent.kube.nodestate import NodeState
from agent.kube.patches import NodePatcher
from agent.node.facts import collect_node_facts
from agent.node.metrics import NodeFactsCollector
from agent.node.paths import HostPaths
from agent.readiness.controller import root_tasks as readiness_tasks
from agent.runtime.clock import SystemClock
from agent.runtime.context import AgentContext, KubeContext
from agent.runtime.ownership import owned_keys
from agent.runtime.supervisor import Supervisor
from agent.runtime.watches import watch_task
from agent.shutdown.controller import root_tasks as shutdown_tasks
from agent.swap.controller import root_tasks as swap_tasks
from agent.telemetry.health import Health
from agent.telemetry.http import TelemetryServer
from agent.telemetry.logs import configure_logging
from agent.telemetry.metrics import new_registry

CAPABILITIES = (shutdown_tasks, swap_tasks, readiness_tasks)
COMPONENT = "kubelet-companion"


def resolve_node_name(config: AgentConfig) -> str:
    return config.node_name or socket.gethostname().lower()


def build_cluster(config: AgentConfig, node: str) -> KubeContext | None:
    connection = connect(config.kubeconfig)
    if connection is None:
        return None
    api = KubeApi(connection.api_client, request_timeout=config.kube.request_timeout)
    kube = AsyncKube(api)
    state = NodeState(
        api,
        node,
        watch_timeout=config.kube.watch_timeout,
        read_timeout=config.kube.watch_read_timeout,
    )
    return KubeContext(
        api=api,
        kube=kube,
        node_state=state,
        events=EventRecorder(kube, component=COMPONENT, host=node),
        patcher=NodePatcher(kube, node, owned_keys(config)),
    )


async def run_agent(config: AgentConfig) -> int:
    node = resolve_node_name(config)
    configure_logging(level=config.log_level, fmt=config.log_format, node=node)
    log = structlog.get_logger(subsystem="agent")
    registry = new_registry("agent")
    health = Health()
    paths = HostPaths.from_config(config.host_paths)

    health.expect("node-facts")
    try:
        server = TelemetryServer(config.metrics_bind_address, registry, health)
    except OSError as error:
        log.error("cannot listen", address=config.metrics_bind_address, error=str(error))  # noqa: TRY400 - the reason is the message; a traceback adds nothing
        return 1
    server.start()
    host, port = server.address
    log.info("serving metrics", address=f"{host}:{port}")

    facts = await asyncio.to_thread(collect_node_facts, paths)
    registry.register(NodeFactsCollector(paths, facts))
    health.set_ready("node-facts")

    cluster = await asyncio.to_thread(build_cluster, config, node)
    if cluster is None:
        log.info("no cluster configured: running in node-only mode, Kubernetes features off")
    else:
        log.info("connected to cluster", server=cluster.api.api_client.configuration.host)

    ctx = AgentContext(
        config=config,
        node_name=node,
        paths=paths,
        registry=registry,
        health=health,
        clock=SystemClock(),
        facts=facts,
        cluster=cluster,
    )
    supervisor = Supervisor(health)
    if cluster is not None:
        for reflector in cluster.node_state.reflectors:
            supervisor.add(watch_task(reflector, health))
    for capability in CAPABILITIES:
        for task in capability(ctx):
            supervisor.add(task)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await supervisor.run(stop)
    except RuntimeError as error:
        log.error("agent failed", error=str(error))  # noqa: TRY400 - the task's crash was logged with its traceback
        return 1
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        server.close()
        if cluster is not None:
            cluster.kube.close()
    log.info("agent stopped")
    return 0
