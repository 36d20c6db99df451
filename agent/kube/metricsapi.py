"""metrics.k8s.io (metrics-server's NodeMetrics and PodMetrics), read as raw JSON, bounded.

The group is an aggregated API: a cluster without metrics-server does not serve it, and
discovery says so (``/apis/metrics.k8s.io/v1beta1`` is 404), which ``served`` reports so the
descheduler can name its fallback instead of failing every cycle. It has no watch, so it is
listed: NodeMetrics every few seconds (one list where upstream's collector sends one Get per
node), PodMetrics once per cycle that needs them. Each answer is read up to a byte bound
and refused beyond it, like every other input.
"""

from __future__ import annotations

import json
from typing import Any

import urllib3

from agent.kube.api import KubeApi
from agent.kube.errors import KubeError, NotFound, Timeout, Unavailable
from agent.kube.resources import NODE_METRICS, POD_METRICS, Resource

GROUP_VERSION_PATH = "/apis/metrics.k8s.io/v1beta1"
MAX_NODE_METRICS_BYTES = 64 * 2**20
"""About 300 bytes a node: far above any cluster's node count."""
MAX_POD_METRICS_BYTES = 512 * 2**20
"""About 500 bytes a pod (more with many containers): 150,000 pods fit several times."""


class MetricsApi:
    """Blocking reads of metrics.k8s.io; async code runs them on a worker thread."""

    def __init__(
        self,
        api: KubeApi,
        *,
        max_node_bytes: int = MAX_NODE_METRICS_BYTES,
        max_pod_bytes: int = MAX_POD_METRICS_BYTES,
    ) -> None:
        self.api = api
        self.max_node_bytes = max_node_bytes
        self.max_pod_bytes = max_pod_bytes

    def served(self) -> bool:
        """Discovery lists the group (``False`` on 404; other failures raise)."""
        try:
            self.api.request("GET", GROUP_VERSION_PATH)
        except NotFound:
            return False
        return True

    def node_metrics(self) -> list[Any]:
        """Every NodeMetrics object (``items`` of the list)."""
        return self._items(NODE_METRICS, self.max_node_bytes)

    def pod_metrics(self) -> list[Any]:
        """Every PodMetrics object, of every namespace."""
        return self._items(POD_METRICS, self.max_pod_bytes)

    def _items(self, resource: Resource, limit: int) -> list[Any]:
        path = resource.path()
        raw = self.api.open("GET", path)
        try:
            data = raw.read(limit + 1)
        except (urllib3.exceptions.TimeoutError, TimeoutError) as error:
            raise Timeout(f"GET {path}: reading the response timed out") from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise Unavailable(f"GET {path}: reading the response failed: {error}") from error
        finally:
            raw.release_conn()
        if len(data) > limit:
            raise KubeError(f"GET {path}: the answer is larger than {limit} bytes")
        try:
            body = json.loads(data)
        except (ValueError, RecursionError) as error:
            raise Unavailable(f"GET {path}: response is not JSON: {error}") from error
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise Unavailable(f"GET {path}: the answer has no items list")
        return items
