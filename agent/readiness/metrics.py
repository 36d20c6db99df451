"""The readiness gate's metrics, registered into the registry the entrypoint hands us.

``gate_wait_seconds`` is a gauge, not a histogram: each agent lifts its node's gate at most
once, so one exact value per node is what there is to say, and ``quantile()`` across nodes
aggregates it. It is only exposed once this process lifted the gate, so it never reports a
made-up zero.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

MISSING_KINDS = ("daemonset", "pod", "csi_driver")


class _WaitCollector(Collector):
    def __init__(self) -> None:
        self.value: float | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if self.value is not None:
            yield GaugeMetricFamily(
                "kubelet_companion_readiness_gate_wait_seconds",
                "Seconds from the Node's creation to this agent removing the gate taint.",
                value=self.value,
            )


class ReadinessMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.gate_held = Gauge(
            "kubelet_companion_readiness_gate_held",
            "1 while this node carries the readiness gate taint, else 0.",
            registry=registry,
        )
        self.taint_operations = Counter(
            "kubelet_companion_readiness_taint_operations",
            "Gate taint writes by operation (add, remove, mark-completed) and result "
            "(success, noop, error, retried).",
            ["operation", "result"],
            registry=registry,
        )
        self.missing = Gauge(
            "kubelet_companion_readiness_missing",
            "What the gate waits for, by kind: DaemonSets without a pod here, unready critical "
            "pods, unregistered CSI drivers.",
            ["kind"],
            registry=registry,
        )
        self.intolerant = Gauge(
            "kubelet_companion_readiness_intolerant_daemonsets",
            "Critical DaemonSets that should run here but do not tolerate the gate taint.",
            registry=registry,
        )
        self.input_events = Counter(
            "kubelet_companion_readiness_input_events",
            "Watch events (node, pods, DaemonSets, CSINode) the gate was told about.",
            registry=registry,
        )
        self.evaluated_input_events = Gauge(
            "kubelet_companion_readiness_evaluated_input_events",
            "The input event count the last finished evaluation had seen: below "
            "kubelet_companion_readiness_input_events_total while events wait to be judged.",
            registry=registry,
        )
        self._wait = _WaitCollector()
        registry.register(self._wait)
        for kind in MISSING_KINDS:
            self.missing.labels(kind=kind).set(0)

    def set_wait(self, seconds: float) -> None:
        self._wait.value = seconds
