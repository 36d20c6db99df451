"""The agent's load on the API server, from the fake server's request log.

Pure functions over the log's JSON lines (``footprint_cluster.dump``), so the benchmark's
arithmetic can be checked without running it: requests per minute by verb and resource,
the bytes the agent received, and every list and watch with its scope.

A list or watch is *node-scoped* when a field selector names this node
(``spec.nodeName=<node>`` for pods, ``metadata.name=<node>`` for the Node, its CSINode and
its NodeReport); anything else is *cluster-wide* and must have a reason in
``CLUSTER_WIDE_REASONS``. A cluster-wide pod list or watch is a bug: on 5,000 nodes it
would send every pod of the cluster to every node.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

CLUSTER_WIDE_REASONS = {
    "daemonsets": (
        "the readiness gate waits for every critical DaemonSet (by label, in its namespaces) "
        "whose pods belong on this node, before any of them exists: a node-scoped pod watch "
        "cannot see a DaemonSet that has no pod here yet"
    ),
}
"""Why a resource is watched beyond this node. Anything cluster-wide not named here shows
up in the benchmark's output as unexplained."""

_RESOURCE = re.compile(
    r"^/(?:api/v1|apis/[^/]+/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)


@dataclass(frozen=True)
class Call:
    verb: str
    resource: str
    namespace: str
    selectors: str

    @property
    def scope(self) -> str:
        named = ("spec.nodeName=", "metadata.name=")
        return "node" if any(field in self.selectors for field in named) else "cluster"


def classify(entry: dict[str, Any]) -> Call:
    """Kubernetes' verb (get, list, watch, create, patch, ...) and the resource of one request."""
    path = entry["path"]
    match = _RESOURCE.match(path.replace("/watch/", "/"))
    if match is None:
        return Call(entry["method"].lower(), path, "", "")
    resource = match["resource"]
    if match["sub"]:
        resource = f"{resource}/{match['sub']}"
    named = match["name"] is not None
    query = entry.get("query") or {}
    selectors = ",".join(
        f"{key}={query[key]}" for key in ("fieldSelector", "labelSelector") if key in query
    )
    method = entry["method"]
    if method == "GET":
        verb = "watch" if entry.get("watch") else ("get" if named else "list")
    else:
        verb = {"POST": "create", "PUT": "update"}.get(method, method.lower())
    return Call(verb, resource, match["ns"] or "", selectors)


@dataclass
class ApiLoad:
    minutes: float
    rates: dict[tuple[str, str], float]
    """Requests per minute by (verb, resource)."""
    requests_per_minute: float
    bytes_per_minute: float
    bytes_total: int
    scopes: list[tuple[Call, int]]
    """Every distinct list/watch with how often it was sent."""

    @property
    def cluster_wide_pods(self) -> int:
        return sum(
            count
            for call, count in self.scopes
            if call.resource == "pods" and call.scope == "cluster"
        )

    @property
    def unexplained(self) -> list[Call]:
        return [
            call
            for call, _ in self.scopes
            if call.scope == "cluster" and call.resource not in CLUSTER_WIDE_REASONS
        ]


def api_load(
    entries: list[dict[str, Any]],
    start: float,
    end: float,
    earlier: list[dict[str, Any]] | None = None,
) -> ApiLoad:
    """The load of the requests sent in ``[start, end)`` (monotonic seconds, as logged).

    ``entries`` is the log dumped at ``end``; ``earlier``, the same log dumped at ``start``.
    The bytes received in the window are the difference of the two dumps' byte counts (a
    watch opened before ``start`` keeps streaming into the window); without ``earlier``,
    every byte logged until ``end`` counts.
    """
    window = [e for e in entries if start <= e["t"] < end]
    minutes = max(end - start, 1e-9) / 60
    calls = [(classify(e), e) for e in window]
    counts = Counter((call.verb, call.resource) for call, _ in calls)
    scopes = Counter(call for call, _ in calls if call.verb in ("list", "watch"))
    total_bytes = sum(int(e.get("bytes") or 0) for e in entries) - sum(
        int(e.get("bytes") or 0) for e in earlier or ()
    )
    return ApiLoad(
        minutes=minutes,
        rates={key: count / minutes for key, count in sorted(counts.items())},
        requests_per_minute=len(window) / minutes,
        bytes_per_minute=total_bytes / minutes,
        bytes_total=total_bytes,
        scopes=sorted(scopes.items(), key=lambda item: (item[0].resource, item[0].verb)),
    )
