"""metrics.k8s.io's node usage, sampled and smoothed between cycles (upstream's
``MetricsCollector``).

Upstream samples every 5 s from start and waits, before the first cycle, until one sample
was taken (``hasSynced``, at most a minute). So does this, with one NodeMetrics list per
sample instead of a Get per node, smoothing each node's figures as upstream does
(``cache.metricsserver``). A failed sample keeps the previous figures, as upstream's failed
Get does; it is counted, and logged when its reason changes.

Whether the group is served at all is asked of discovery first: a cluster without
metrics-server does not serve it, and then the plugins read the agents' NodeReports instead
(named in the plan, logged here once). Discovery is asked again every minute, so a
metrics-server installed later is used from its first sample on.

Concurrency: the sample loop is a supervised root task on the event loop; the blocking
calls run on a worker thread, and only the loop writes the smoother and these fields.
"""

from __future__ import annotations

import asyncio

import structlog
from prometheus_client import Counter

from agent.clock import Clock
from agent.descheduler.cache.metricsserver import (
    SAMPLE_INTERVAL_SECONDS,
    NodeMetricsSmoother,
    node_sample,
)
from agent.kube.errors import KubeError
from agent.kube.metricsapi import MetricsApi

DISCOVERY_INTERVAL_SECONDS = 60.0
"""How often discovery is asked again while metrics.k8s.io is not served."""
SOURCE = "KubernetesMetrics"

_log = structlog.get_logger(subsystem="descheduler.metrics")


class MetricsCollector:
    """NodeMetrics sampled every 5 s, smoothed; ``served`` from discovery."""

    def __init__(self, api: MetricsApi, clock: Clock, errors: Counter) -> None:
        self.api = api
        self.clock = clock
        self.errors = errors
        """``…_usage_source_errors_total``; labelled here with ``source``."""
        self.smoother = NodeMetricsSmoother()
        self.served: bool | None = None
        """``None`` until discovery answered."""
        self.error = ""
        """Why no sample was ever taken (the last failure), while none was."""
        self.first_attempt = asyncio.Event()
        """Set once discovery answered and, if served, one sample was tried."""
        self._said = ""

    async def run(self) -> None:
        next_discovery = 0.0
        while True:
            now = self.clock.monotonic()
            if self.served is not True and now >= next_discovery:
                await self._discover()
                next_discovery = now + DISCOVERY_INTERVAL_SECONDS
            if self.served:
                await self._sample()
            self.first_attempt.set()
            await self.clock.sleep(SAMPLE_INTERVAL_SECONDS)

    async def _discover(self) -> None:
        try:
            served = await asyncio.to_thread(self.api.served)
        except KubeError as error:
            # Registered but failing (an APIService whose backend is down answers 503):
            # served, and the samples will say why they fail.
            self._tell(f"discovery of metrics.k8s.io failed: {error}")
            served = True
        if served != self.served:
            if served:
                _log.info("metrics.k8s.io is served: KubernetesMetrics reads it")
            else:
                _log.warning(
                    "metrics.k8s.io is not served (no metrics-server?): KubernetesMetrics "
                    "falls back to the agents' NodeReports (fallback metrics-api-absent)"
                )
        self.served = served

    async def _sample(self) -> None:
        try:
            items = await asyncio.to_thread(self.api.node_metrics)
        except KubeError as error:
            self.errors.labels(SOURCE).inc()
            reason = f"NodeMetrics not read: {error}"
            if not self.smoother.sampled:
                self.error = reason
            self._tell(reason)
            return
        read = node_sample(items)
        if read.unreadable:
            self._tell(f"{read.unreadable} NodeMetrics could not be read and were left out")
        self.smoother.update(read.usage)
        self.error = ""
        if self._said and not read.unreadable:
            _log.info("NodeMetrics read again")
            self._said = ""

    def _tell(self, reason: str) -> None:
        """A warning when the reason is new (a failure that repeats is said once)."""
        if reason != self._said:
            _log.warning("metrics.k8s.io", problem=reason)
            self._said = reason
