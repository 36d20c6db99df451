"""The scenario's Deployments: seeded, so every implementation meets the same cluster.

``count`` Deployments of 20-40 replicas, each pod requesting cpu 100m-500m and memory
128Mi-1Gi, every third guarded by a PodDisruptionBudget with ``maxUnavailable: 1``, spread
over a few namespaces. Replica counts and sizes are drawn from ``seed``; then cpu sizes are
stepped one notch at a time (a seeded choice of Deployment each time) until the requests
come within 2 points of ``target`` x the capacity they are meant to fill.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

CPU_SIZES = (100, 150, 200, 250, 300, 400, 500)
MEMORY_SIZES = (128, 256, 384, 512, 768, 1024)
TOLERANCE = 0.02


@dataclass
class Deployment:
    namespace: str
    name: str
    replicas: int
    cpu: int
    """millicores per pod"""
    memory: int
    """MiB per pod"""
    budget: bool

    @property
    def cpu_total(self) -> int:
        return self.replicas * self.cpu


def generate(
    seed: int,
    count: int,
    capacity_milli: int,
    target: float,
    *,
    prefix: str = "app",
    namespaces: int = 8,
) -> list[Deployment]:
    rng = random.Random(seed)  # noqa: S311 - a reproducible layout, not a secret
    out = [
        Deployment(
            namespace=f"bench-{i % namespaces}",
            name=f"{prefix}-{i:02d}",
            replicas=rng.randint(20, 40),
            cpu=rng.choice(CPU_SIZES),
            memory=rng.choice(MEMORY_SIZES),
            budget=i % 3 == 0,
        )
        for i in range(count)
    ]
    for _ in range(10_000):
        total = sum(d.cpu_total for d in out)
        if total > (target + TOLERANCE) * capacity_milli:
            choices, step = [d for d in out if d.cpu > CPU_SIZES[0]], -1
        elif total < (target - TOLERANCE) * capacity_milli:
            choices, step = [d for d in out if d.cpu < CPU_SIZES[-1]], 1
        else:
            break
        if not choices:
            break
        chosen = rng.choice(choices)
        chosen.cpu = CPU_SIZES[CPU_SIZES.index(chosen.cpu) + step]
    return out


def deployment_body(d: Deployment) -> dict[str, Any]:
    labels = {"app": d.name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": d.name, "namespace": d.namespace, "labels": labels},
        "spec": {
            "replicas": d.replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 30,
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.9",
                            "resources": {
                                "requests": {"cpu": f"{d.cpu}m", "memory": f"{d.memory}Mi"}
                            },
                        }
                    ],
                },
            },
        },
    }


def budget_body(d: Deployment) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": d.name, "namespace": d.namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": d.name}}},
    }
