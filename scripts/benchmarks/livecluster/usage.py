"""Actual usage that differs from requests: seeded per Deployment, sampled per node (pure).

Balancing on requests says nothing of a cluster whose pods use more, or less, than they ask
for. So in a usage scenario each Deployment gets a fixed usage factor drawn from the seed:
exactly ``HOT_SHARE`` of them (rounded) are hot, using ``HOT`` times their cpu requests,
the rest ``COLD`` times. The harness draws the factors from the scenario's Deployments and
hands them to the kubelet stand-in; a replacement pod keeps its Deployment's factor (the
factor follows the workload, not the pod), and a pod of a Deployment not in the table uses
its requests (factor 1). Every sample multiplies each pod's figure by a
fresh noise factor within ``1 ± NOISE``. A node cannot use more than its cores: when its
pods want more, every pod on it is scaled down alike (throttled), so the pods always sum to
the node. Memory usage is the pod's memory request, without noise.

The figures leave the kubelet stand-in two ways, as the agent and a metrics pipeline would
carry them: each node's NodeReport (``usagefeed``) and a Prometheus exposition of
``METRIC{instance="<node>"}`` (0-1), which ``parse_exposition`` reads back for the
benchmark's own figures.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

HOT_SHARE = 0.35
HOT = (1.5, 2.5)
COLD = (0.2, 0.5)
NOISE = 0.10
SAMPLE_SECONDS = 5.0
REPORT_SECONDS = 10.0
"""How often each NodeReport's status is written; also its ``heartbeatSeconds``."""
METRIC = "livebench_node_cpu_usage_ratio"
SAMPLE_TIME_METRIC = "livebench_usage_sample_timestamp_seconds"
"""When the exposed sample was taken (wall clock): a reader waits for a sample newer than a
moment it cares about."""


def usage_factors(seed: int, deployments: Iterable[str]) -> dict[str, float]:
    """Each Deployment's usage / cpu requests (``namespace/name`` -> factor): the same for
    the same seed and names, in any order."""
    names = sorted(set(deployments))
    rng = random.Random(f"usage/{seed}")  # noqa: S311 - a reproducible layout, not a secret
    hot = set(rng.sample(names, round(HOT_SHARE * len(names))))
    return {name: rng.uniform(*(HOT if name in hot else COLD)) for name in names}


@dataclass(frozen=True)
class PodLoad:
    """What a usage sample needs of a Running pod."""

    uid: str
    node: str
    deployment: str
    """``namespace/name`` of the Deployment (or of the pod, when it has none)."""
    cpu_request: float
    """Cores."""
    memory_request: int
    """Bytes."""


@dataclass(frozen=True)
class NodeSample:
    """One node's usage in one sample."""

    cpu: float
    """Cores in use (at most the node's cores)."""
    memory: int
    pods: Mapping[str, tuple[float, int]]
    """Pod uid -> (cores, bytes)."""
    demand: float
    """Cores the pods wanted before throttling."""
    capacity: float

    @property
    def ratio(self) -> float:
        return self.cpu / self.capacity if self.capacity else 0.0


def sample(
    pods: Iterable[PodLoad],
    nodes: Iterable[str],
    *,
    cores: float,
    factor: Callable[[str], float],
    noise: Callable[[], float],
) -> dict[str, NodeSample]:
    """Every node's usage now: each pod's requests x its Deployment's ``factor`` x
    ``1 + noise()``, scaled down alike on a node whose pods want more than ``cores``."""
    wanted: dict[str, dict[str, tuple[float, int]]] = {node: {} for node in nodes}
    for pod in pods:
        if pod.node in wanted:
            cpu = max(0.0, pod.cpu_request * factor(pod.deployment) * (1.0 + noise()))
            wanted[pod.node][pod.uid] = (cpu, pod.memory_request)
    out = {}
    for node, entries in wanted.items():
        demand = sum(cpu for cpu, _ in entries.values())
        scale = cores / demand if demand > cores else 1.0
        scaled = {uid: (cpu * scale, memory) for uid, (cpu, memory) in entries.items()}
        out[node] = NodeSample(
            cpu=min(cores, sum(cpu for cpu, _ in scaled.values())),
            memory=sum(memory for _, memory in scaled.values()),
            pods=scaled,
            demand=demand,
            capacity=cores,
        )
    return out


def uniform_noise(seed: int, spread: float = NOISE) -> Callable[[], float]:
    rng = random.Random(f"noise/{seed}")  # noqa: S311 - measurement noise, not a secret
    return lambda: rng.uniform(-spread, spread)


_LABEL_VALUE = re.compile(r"^[A-Za-z0-9._-]+$")


def exposition(samples: Mapping[str, NodeSample], taken_at: float) -> str:
    """The Prometheus text exposition of one sample: each node's ratio, and its time."""
    lines = [
        f"# HELP {METRIC} Actual cpu usage of the node over its allocatable cpu (0-1).",
        f"# TYPE {METRIC} gauge",
    ]
    for node, each in sorted(samples.items()):
        if not _LABEL_VALUE.match(node):  # our own node names; never escape-worthy
            raise ValueError(f"node name {node!r} is not a plain label value")
        lines.append(f'{METRIC}{{instance="{node}"}} {each.ratio:.4f}')
    lines += [f"# TYPE {SAMPLE_TIME_METRIC} gauge", f"{SAMPLE_TIME_METRIC} {taken_at:.3f}"]
    return "\n".join(lines) + "\n"


_SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{instance="([^"]*)"\})? (\S+)$')


def parse_exposition(text: str) -> tuple[dict[str, float], float | None]:
    """``(node -> ratio, sample time)`` from ``exposition``'s text; lines of other metrics,
    comments and values that are not finite numbers are skipped."""
    ratios: dict[str, float] = {}
    taken_at = None
    for line in text.splitlines():
        match = _SERIES.match(line.strip())
        if match is None:
            continue
        name, instance, raw = match.groups()
        try:
            value = float(raw)
        except ValueError:
            continue
        if not math.isfinite(value):
            continue
        if name == METRIC and instance:
            ratios[instance] = value
        elif name == SAMPLE_TIME_METRIC:
            taken_at = value
    return ratios, taken_at
