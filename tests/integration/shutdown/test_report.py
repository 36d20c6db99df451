"""A shutdown start reaches the NodeReport within a second: the real shutdown controller (real
logind, PowerOff) publishes to the status board, and the report controller writes at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from agent.clock import SystemClock
from agent.kube.reportwriter import NodeReportWriter
from agent.report.controller import ReportController
from agent.report.metrics import ReportMetrics
from agent.report.sampling import NodeSampler
from agent.runtime.status import StatusBoard
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.hosttree import HostTree
from tests.harness.nodereport import NodeProc, register_crd
from tests.harness.shutdownpods import pod
from tests.harness.waiting import wait_until
from tests.integration.shutdown.conftest import NODE, ShutdownRig


def _shutdown(server: FakeApiServer) -> dict[str, Any]:
    obj = server.try_get("nodereports", NODE) or {}
    return dict((obj.get("status") or {}).get("shutdown") or {})


async def test_a_shutdown_start_reaches_the_report_within_a_second(
    rig_factory: Callable[..., Any], tmp_path: Path
) -> None:
    """PrepareForShutdown(true) turns the report's shutdown to inProgress (start, current
    phase, budget end) within 1 s, with samples only every 30 s. A pod with 30 s of grace keeps
    the shutdown in progress: without one the run ends (and logind's harness cancels it) within
    milliseconds, and the report would rightly skip straight past inProgress."""
    server = FakeApiServer().start()
    try:
        register_crd(server)
        board = StatusBoard()

        def attach(rig: ShutdownRig) -> None:
            rig.controller.status = board  # what root_tasks passes: the agent's one board

        rig: ShutdownRig = await rig_factory(
            buckets=[(0, 20), (1000, 10)],
            server=server,
            pods=[pod("slow-to-stop")],
            prepare=attach,
        )
        await rig.wait_for_lock()
        host = HostTree(tmp_path / "report-host")
        NodeProc(host).set(cpu_fraction=0.1, memory_fraction=0.2)
        assert rig.cluster is not None
        from agent.config.report import ReportConfig  # noqa: PLC0415

        controller = ReportController(
            config=ReportConfig(sample_interval=30.0),  # type: ignore[arg-type]
            boot_id="boot",
            source=NodeSampler(host.paths, rig.config.memory_swap, SystemClock().monotonic),
            sink=NodeReportWriter(rig.cluster.kube, NODE),
            board=board,
            clock=SystemClock(),
            metrics=ReportMetrics(CollectorRegistry()),
        )
        task = asyncio.create_task(controller.run())
        try:
            await wait_until(lambda: _shutdown(server).get("state") == "none", "first report")
            await rig.power_off()
            await wait_until(
                lambda: _shutdown(server).get("state") == "inProgress",
                "the shutdown in the NodeReport",
                timeout=1.0,
            )
            shutdown = _shutdown(server)
            assert shutdown["phase"] in (0, 1000)
            assert shutdown["startTime"] < shutdown["budgetEnd"]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await rig.stop()
    finally:
        server.stop()
