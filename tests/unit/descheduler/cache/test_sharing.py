"""Equal sub-values of cached objects are stored once."""

from typing import Any

from agent.descheduler.cache import projection
from agent.descheduler.cache.sharing import Sharing

RICH_NODE: dict[str, Any] = {
    "metadata": {"name": "n1", "labels": {"zone": "a"}},
    "spec": {"taints": [{"key": "t", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


def _pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": name,
            "labels": {"app": "shop"},
            "ownerReferences": [
                {"kind": "ReplicaSet", "name": "r", "uid": "o", "controller": True}
            ],
        },
        "spec": {
            "nodeName": "n1",
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "containers": [{"image": "a:1", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def test_equal_pod_values_are_shared() -> None:
    """Two pods of one template end up holding the very same label, toleration and
    request objects, while their own fields stay their own."""
    sharing = Sharing()
    first = sharing.pod(projection.project_pod(_pod("a")))
    second = sharing.pod(projection.project_pod(_pod("b")))
    assert second.labels is first.labels
    assert second.tolerations is first.tolerations
    assert second.requests is first.requests
    assert second.owners is first.owners
    assert second.images is first.images
    assert (first.name, second.name) == ("a", "b")
    assert second == projection.project_pod(_pod("b"))


def test_equal_node_values_are_shared() -> None:
    """Nodes of one shape share their allocatable and taints."""
    sharing = Sharing()
    first = sharing.node(projection.project_node(RICH_NODE))
    second = sharing.node(projection.project_node(RICH_NODE))
    assert second.allocatable is first.allocatable
    assert second.taints is first.taints


def test_table_starts_over_past_its_limit() -> None:
    """The table of canonical values is bounded: past the limit it is cleared, not grown."""
    sharing = Sharing(limit=2)
    for index in range(5):
        sharing.labels({"app": str(index)})
    assert len(sharing._canonical) <= 2


def test_equal_spread_constraints_are_shared() -> None:
    """Replicas with the same topology spread constraints share one ``extra`` mapping, and a
    pod without constraints carries none."""
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    first_raw, second_raw = _pod("a"), _pod("b")
    first_raw["spec"]["topologySpreadConstraints"] = spread
    second_raw["spec"]["topologySpreadConstraints"] = [dict(spread[0])]
    sharing = Sharing()
    first = sharing.pod(projection.project_pod(first_raw))
    second = sharing.pod(projection.project_pod(second_raw))
    assert second.extra is first.extra
    assert first.extra == {"topologySpreadConstraints": tuple(spread)}
    assert not sharing.pod(projection.project_pod(_pod("c"))).extra
