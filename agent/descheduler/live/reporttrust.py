"""The live loop's side of believing NodeReports: when each changed, what is said about them.

``usage.judge`` decides (pure). This feeds it what only the running process knows: the
NodeReport cache's record of when this process last saw each report change (monotonic), and
the Nodes of the snapshot; and it says what it decided where an operator looks:

- a report not believed is logged once, with its reason and detail, when it starts being
  distrusted or its reason changes, and once more when it is believed again (a report that
  stays bad is not logged every cycle);
- ``kubelet_companion_descheduler_nodereports{state}`` (fresh, stale, distrusted),
  ``..._nodereports_distrusted{reason}`` and the age of the least recently changed believed
  report are computed at scrape time from the same caches, so every replica's metrics say
  what is true now, between cycles too.

Concurrency: ``usage`` runs on the event loop (``ClusterState.snapshot``); the collector
runs on the HTTP server's threads and only reads (``entries`` and ``dict(store)`` are copies
the GIL makes atomic; the projections are immutable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import structlog
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agent.clock import Clock
from agent.descheduler.cache.usage import Verdicts, judge_all
from agent.descheduler.model.cluster import NodeInfo, NodeUsage
from agent.kube.nodereports import NodeReportCache

_log = structlog.get_logger(subsystem="descheduler.nodereports")


class ReportTrust:
    """Judges the watched reports against the snapshot's Nodes; logs each verdict once."""

    def __init__(self, cache: NodeReportCache, clock: Clock) -> None:
        self.cache = cache
        self.clock = clock
        self._said: dict[str, str] = {}
        """Report name -> the distrust reason last logged for it."""

    def verdicts(self, nodes: Mapping[str, NodeInfo]) -> Verdicts:
        """Every report judged now; ``changed_at`` mapped from monotonic to wall seconds."""
        now, monotonic = self.clock.now(), self.clock.monotonic()
        entries = [
            (seen.report, now - (monotonic - seen.at), seen.witnessed)
            for seen in self.cache.entries()
        ]
        return judge_all(entries, nodes, now)

    def usage(self, nodes: Mapping[str, NodeInfo]) -> Mapping[str, NodeUsage]:
        """``ClusterState``'s usage source: the believed reports, with the changes logged."""
        verdicts = self.verdicts(nodes)
        for name, distrusted in verdicts.distrusted.items():
            if self._said.get(name) != distrusted.reason:
                self._said[name] = distrusted.reason
                _log.warning(
                    "NodeReport not believed; its node falls back to requests",
                    report=name,
                    reason=distrusted.reason,
                    detail=distrusted.detail,
                )
        for name in [name for name in self._said if name not in verdicts.distrusted]:
            del self._said[name]
            if name in verdicts.usage:
                _log.info("NodeReport believed again", report=name)
        return verdicts.usage


class NodeReportTrustMetrics(Collector):
    """The reports as the descheduler judges them now, by state and by distrust reason."""

    def __init__(self, verdicts: Callable[[], Verdicts], now: Callable[[], float]) -> None:
        self._verdicts = verdicts
        self._now = now

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return self._families(Verdicts(), 0.0)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return self._families(self._verdicts(), self._now())

    @staticmethod
    def _families(verdicts: Verdicts, now: float) -> Iterator[GaugeMetricFamily]:
        believed = list(verdicts.usage.values())
        stale = sum(1 for usage in believed if usage.stale)
        states = GaugeMetricFamily(
            "kubelet_companion_descheduler_nodereports",
            "NodeReports the descheduler sees, by state: fresh; stale (unchanged for three "
            "heartbeats by the descheduler's clock: the node falls back to requests and the "
            "report vetoes nothing); distrusted (not owned by its Node, malformed, implausible "
            "or from the future: ignored).",
            labels=["state"],
        )
        states.add_metric(["fresh"], len(believed) - stale)
        states.add_metric(["stale"], stale)
        states.add_metric(["distrusted"], len(verdicts.distrusted))
        yield states
        reasons = GaugeMetricFamily(
            "kubelet_companion_descheduler_nodereports_distrusted",
            "NodeReports the descheduler does not believe, by reason.",
            labels=["reason"],
        )
        for reason, count in verdicts.counts().items():
            reasons.add_metric([reason], count)
        yield reasons
        ages = [now - usage.changed_at for usage in believed if usage.changed_at > float("-inf")]
        yield GaugeMetricFamily(
            "kubelet_companion_descheduler_nodereport_max_age_seconds",
            "Seconds since the descheduler last saw the least recently changed NodeReport it "
            "believes change (0 without any).",
            value=max(ages, default=0.0),
        )
