"""One Prometheus registry per process, created by the entrypoint and handed down.

Capabilities define their metrics next to their code and register them into the registry
they are given; nothing registers into the client library's global default registry, so
tests can build as many isolated agents as they like.
"""

from __future__ import annotations

import platform

from prometheus_client import CollectorRegistry, Info
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agent import __version__


class BuildInfoCollector(Collector):
    """``kubelet_companion_build_info{version,python_version,component}`` = 1."""

    def __init__(self, component: str) -> None:
        self._component = component

    def collect(self) -> list[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "kubelet_companion_build_info",
            "A metric with a constant 1 value labelled by the build of kubelet-companion.",
            labels=["version", "python_version", "component"],
        )
        family.add_metric([__version__, platform.python_version(), self._component], 1)
        return [family]


def new_registry(component: str) -> CollectorRegistry:
    """A fresh registry holding build info and the standard process/platform collectors."""
    from prometheus_client import PlatformCollector, ProcessCollector  # noqa: PLC0415 - keep import local to the factory

    registry = CollectorRegistry(auto_describe=True)
    registry.register(BuildInfoCollector(component))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


__all__ = ["BuildInfoCollector", "Info", "new_registry"]
