"""The footprint benchmark's reading of the fake API server's request log: verbs, resources,
scopes and bytes (pinned here so the API-load figures mean what BENCHMARKS.md says)."""

from __future__ import annotations

from typing import Any

import pytest

from scripts.benchmarks import footprint_apiload as apiload


def _entry(
    method: str, path: str, t: float = 1.0, *, watch: bool = False, size: int = 0, **query: str
) -> dict[str, Any]:
    return {"t": t, "method": method, "path": path, "query": query, "watch": watch, "bytes": size}


@pytest.mark.parametrize(
    ("entry", "verb", "resource", "scope"),
    [
        pytest.param(
            _entry("GET", "/api/v1/pods", watch=True, fieldSelector="spec.nodeName=n1"),
            "watch",
            "pods",
            "node",
            id="node-scoped-pod-watch",
        ),
        pytest.param(
            _entry("GET", "/api/v1/pods"), "list", "pods", "cluster", id="cluster-wide-pod-list"
        ),
        pytest.param(
            _entry("GET", "/api/v1/nodes", fieldSelector="metadata.name=n1"),
            "list",
            "nodes",
            "node",
            id="own-node-list",
        ),
        pytest.param(
            _entry(
                "GET",
                "/apis/apps/v1/namespaces/kube-system/daemonsets",
                watch=True,
                labelSelector="app.kubernetes.io/name=x",
            ),
            "watch",
            "daemonsets",
            "cluster",
            id="label-selected-daemonsets-stay-cluster-wide",
        ),
        pytest.param(
            _entry("PATCH", "/apis/kubelet-companion.io/v1alpha1/nodereports/n1/status"),
            "patch",
            "nodereports/status",
            "cluster",
            id="status-subresource",
        ),
        pytest.param(
            _entry("GET", "/api/v1/nodes/n1"), "get", "nodes", "cluster", id="get-by-name"
        ),
        pytest.param(
            _entry("POST", "/api/v1/namespaces/default/events"),
            "create",
            "events",
            "cluster",
            id="create",
        ),
        pytest.param(
            _entry("GET", "/api/v1/watch/pods", watch=True, fieldSelector="spec.nodeName=n1"),
            "watch",
            "pods",
            "node",
            id="watch-path-form",
        ),
    ],
)
def test_classify(entry: dict[str, Any], verb: str, resource: str, scope: str) -> None:
    """Each request maps to Kubernetes' verb and resource, and a list or watch is node-scoped
    only when a field selector names the node (a label selector never makes it so)."""
    call = apiload.classify(entry)
    assert (call.verb, call.resource, call.scope) == (verb, resource, scope)


def test_load_counts_the_window_and_the_bytes_streamed_into_it() -> None:
    """Rates count requests sent in the window; bytes are the growth of the log's counts
    between two dumps, so a watch opened before the window counts what it streamed during."""
    watch = _entry(
        "GET", "/api/v1/pods", 0.5, watch=True, size=100, fieldSelector="spec.nodeName=n"
    )
    before = [watch]
    after = [
        {**watch, "bytes": 400},
        _entry("PATCH", "/api/v1/nodes/n", 30.0, size=50),
        _entry("GET", "/api/v1/pods", 90.0, size=7),
    ]
    load = apiload.api_load(after, 0.0 + 10, 70.0, before)
    assert load.minutes == 1.0
    assert load.rates == {("patch", "nodes"): 1.0}
    assert load.bytes_total == 400 + 50 + 7 - 100
    assert load.cluster_wide_pods == 0
    whole = apiload.api_load(after, 0.0, 100.0)
    assert whole.cluster_wide_pods == 1
    assert [call.resource for call in whole.unexplained] == ["pods"]
