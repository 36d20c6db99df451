"""The live metrics.k8s.io collector, driven by a hand clock against a stand-in API: a sample
every 5 s smoothed as upstream's, a failed sample keeping the previous figures (counted),
and discovery deciding whether NodeReports stand in (asked again a minute later)."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from agent.descheduler.live.metricscollector import MetricsCollector
from agent.kube.errors import Unavailable
from tests.harness.clock import HandClock
from tests.harness.kubeobjects import node_metrics
from tests.harness.waiting import wait_until


class StandInMetricsApi:
    """Answers ``served`` and ``node_metrics`` from what the test sets; counts the calls."""

    def __init__(self) -> None:
        self.is_served = True
        self.cpu: str | None = "3"
        self.discoveries = 0
        self.samples = 0

    def served(self) -> bool:
        self.discoveries += 1
        return self.is_served

    def node_metrics(self) -> list[Any]:
        self.samples += 1
        if self.cpu is None:
            raise Unavailable("GET /apis/metrics.k8s.io/v1beta1/nodes: 503")
        return [node_metrics("a", self.cpu)]


def _collector(api: StandInMetricsApi, clock: HandClock) -> tuple[MetricsCollector, Counter]:
    errors = Counter("errors", "", ["source"], registry=CollectorRegistry())
    return MetricsCollector(api, clock, errors), errors  # type: ignore[arg-type]  # a stand-in


async def test_samples_every_five_seconds_smoothed_and_kept_on_failure() -> None:
    """First sample as it is, the next smoothed (0.9 x 3000 + 0.1 x 1000 = 2800), a failed
    one keeps 2800 and is counted."""
    api, clock = StandInMetricsApi(), HandClock()
    collector, errors = _collector(api, clock)
    task = asyncio.create_task(collector.run())
    try:
        await wait_until(collector.first_attempt.is_set, "the first sample")
        assert collector.smoother.nodes == {"a": {"cpu": 3000, "memory": 2**30}}
        api.cpu = "1"
        clock.advance(5)
        await wait_until(lambda: api.samples == 2, "the second sample")
        await wait_until(lambda: collector.smoother.nodes["a"]["cpu"] == 2800, "smoothing")
        api.cpu = None
        clock.advance(5)
        await wait_until(lambda: errors.labels("KubernetesMetrics")._value.get() == 1, "a count")
        assert collector.smoother.nodes["a"]["cpu"] == 2800
        assert collector.error == ""  # sampled before: the figures stand
    finally:
        task.cancel()


async def test_not_served_is_asked_again_a_minute_later() -> None:
    """Discovery says no: nothing is sampled; a minute later it is asked again, and a
    metrics-server installed meanwhile is sampled from then on."""
    api, clock = StandInMetricsApi(), HandClock()
    api.is_served = False
    collector, _ = _collector(api, clock)
    task = asyncio.create_task(collector.run())
    try:
        await wait_until(collector.first_attempt.is_set, "discovery")
        assert (collector.served, api.samples) == (False, 0)
        api.is_served = True
        for _ in range(12):
            clock.advance(5)
            await asyncio.sleep(0)
        await wait_until(lambda: api.samples == 1, "a sample once served")
        assert collector.served is True
        assert api.discoveries == 2  # at the start, and once a minute later
    finally:
        task.cancel()
