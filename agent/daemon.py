"""The ``agent`` process: wire adapters and capabilities, run them, stop them in stages.

Start-up order matters for the probes: the telemetry listener comes up first (so a slow
API server never hides ``/healthz``), node facts are sampled before ``/readyz`` turns
green, and the watches of NodeState gate readiness in cluster mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Sequence

import structlog

from agent.clock import SystemClock, first_done
from agent.config import AgentConfig
from agent.kube.client import AsyncKube
from agent.kube.errors import KubeConfigError
from agent.kube.events import EventRecorder
from agent.kube.nodestate import NodeState
from agent.kube.patches import NodePatcher
from agent.kube.session import open_api
from agent.kube.tokenclaims import bearer_token, decode_token, node_binding_problem
from agent.node.facts import collect_node_facts
from agent.node.metrics import NodeFactsCollector
from agent.node.paths import HostPaths
from agent.readiness.controller import root_tasks as readiness_tasks
from agent.readiness.presets import gate_keys
from agent.report.controller import root_tasks as report_tasks
from agent.runtime.context import AgentContext, KubeContext
from agent.runtime.ownership import owned_keys
from agent.runtime.supervisor import FatalTaskError, RootTask, Supervisor
from agent.runtime.watches import watch_task
from agent.shutdown.controller import root_tasks as shutdown_tasks
from agent.swap.controller import root_tasks as swap_tasks
from agent.telemetry.health import Health
from agent.telemetry.http import TelemetryServer
from agent.telemetry.logs import configure_logging
from agent.telemetry.metrics import new_registry

Capability = Callable[[AgentContext], list[RootTask]]
CAPABILITIES: tuple[Capability, ...] = (shutdown_tasks, swap_tasks, readiness_tasks, report_tasks)
COMPONENT = "kubelet-companion"


def owned_node_keys(config: AgentConfig) -> Callable[[str], bool]:
    """Our domain, plus the readiness gate's taint key when its preset names a foreign one."""
    extra = []
    if config.readiness.enabled:
        extra.append(gate_keys(config.readiness.preset, config.readiness.taint_key).taint)
    return owned_keys(extra)


def build_cluster(config: AgentConfig, node: str) -> KubeContext | None:
    api = open_api(config)
    if api is None:
        return None
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
        patcher=NodePatcher(kube, node, owned_node_keys(config)),
    )


def assemble(
    ctx: AgentContext,
    capabilities: Sequence[Capability] = CAPABILITIES,
    *,
    stop_timeout: float = 10.0,
) -> Supervisor:
    """Every root task of the agent: NodeState's watches, then each capability's tasks.

    Tests and benchmarks that run an in-process agent use this too (with the capabilities
    they exercise), so they run the same wiring as the real process.
    """
    supervisor = Supervisor(ctx.health, stop_timeout=stop_timeout, clock=ctx.clock)
    if ctx.cluster is not None:
        for reflector in ctx.cluster.node_state.reflectors:
            supervisor.add(watch_task(reflector, ctx.health))
    for capability in capabilities:
        for task in capability(ctx):
            supervisor.add(task)
    return supervisor


async def _start(
    config: AgentConfig, node: str, health: Health
) -> tuple[AgentContext, TelemetryServer]:
    log = structlog.get_logger(subsystem="agent")
    registry = new_registry("agent")
    paths = HostPaths.from_config(config.host_paths)
    health.expect("node-facts")
    server = TelemetryServer(
        config.metrics_bind_address,
        registry,
        health,
        read_timeout=config.metrics_read_timeout,
        max_connections=config.metrics_max_connections,
    )
    server.start()
    host, port = server.address
    log.info("serving metrics", address=f"{host}:{port}")
    try:
        facts = await asyncio.to_thread(collect_node_facts, paths)
        registry.register(NodeFactsCollector(paths, facts))
        health.set_ready("node-facts")
        cluster = await asyncio.to_thread(build_cluster, config, node)
    except BaseException:
        server.close()
        raise
    if cluster is None:
        log.info("no cluster configured: running in node-only mode, Kubernetes features off")
    else:
        claims = decode_token(bearer_token(cluster.api.api_client) or "")
        log.info(
            "connected to cluster",
            server=cluster.api.api_client.configuration.host,
            credentials=claims.describe() if claims is not None else "no service-account token",
        )
        if (problem := node_binding_problem(claims, node)) is not None:
            log.warning(problem)
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
    return ctx, server


async def run_agent(config: AgentConfig) -> int:
    """Run until SIGINT or SIGTERM (exit 0); 2 for a bad kubeconfig, 1 for a failure."""
    node = config.resolved_node_name
    configure_logging(level=config.log_level, fmt=config.log_format, node=node)
    log = structlog.get_logger(subsystem="agent")
    # Signals are handled from the very start, so a stop during start-up is clean too.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        return await _run(config, node, stop)
    except KubeConfigError as error:
        log.error("cannot use the configured kubeconfig", error=str(error))  # noqa: TRY400 - a config problem, not a crash
        return 2
    except OSError as error:
        log.error("cannot start", error=str(error))  # noqa: TRY400 - e.g. the listen address is taken
        return 1
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def _run(config: AgentConfig, node: str, stop: asyncio.Event) -> int:
    log = structlog.get_logger(subsystem="agent")
    health = Health()
    starting = asyncio.ensure_future(_start(config, node, health))
    # ``starting`` is ours, only watched by the race (the stop waiter is the race's own):
    # a stop that comes first cancels it here, and waits for the cancel to land.
    await first_done(starting, stop.wait())
    if not starting.done():
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        log.info("agent stopped during start-up")
        return 0
    ctx, server = starting.result()
    try:
        await assemble(ctx).run(stop)
    except FatalTaskError as error:
        log.error("agent failed", error=str(error))  # noqa: TRY400 - the task's crash was logged with its traceback
        return 1
    finally:
        server.close()
        if ctx.cluster is not None:
            ctx.cluster.kube.close()
    log.info("agent stopped")
    return 0
