"""The msgspec decoding path gives exactly the projections ``json.loads`` gives."""

import gzip
import json
from typing import Any

import pytest

from agent.descheduler.cache import projection
from agent.descheduler.cache.wire import codec_for
from tests.harness.repository import CLUSTER_1K

PROJECT = {
    "Pod": projection.project_pod,
    "Node": projection.project_node,
    "PodDisruptionBudget": projection.project_disruption_budget,
    "PersistentVolumeClaim": projection.project_claim,
}

RICH_POD: dict[str, Any] = {
    "metadata": {
        "name": "rich",
        "namespace": "shop",
        "uid": "u-1",
        "resourceVersion": "7",
        "creationTimestamp": "2026-11-22T00:00:00Z",
        "deletionTimestamp": "2026-11-22T00:10:00Z",
        "labels": {"app": "shop"},
        "annotations": {
            "descheduler.alpha.kubernetes.io/evict": "true",
            "descheduler.alpha.kubernetes.io/prefer-no-eviction": "",
            "kubernetes.io/config.source": "file",
            "kubernetes.io/config.mirror": "abc",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
        },
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s", "uid": "o-1"},
            {"kind": "ReplicaSet", "name": "r", "uid": "o-2", "controller": True},
        ],
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
    },
    "spec": {
        "nodeName": "n1",
        "priority": 100,
        "priorityClassName": "p",
        "nodeSelector": {"disk": "ssd"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "overhead": {"cpu": "10m", "memory": "1Mi"},
        "initContainers": [
            {"name": "init", "image": "i:1", "resources": {"requests": {"cpu": "2"}}},
            {
                "name": "sidecar",
                "image": "s:1",
                "restartPolicy": "Always",
                "resources": {"requests": {"memory": "64Mi"}},
            },
        ],
        "containers": [
            {
                "name": "a",
                "image": "b:1",
                "env": [{"name": "X", "value": "1"}],
                "resources": {
                    "requests": {"cpu": "250m", "memory": "1Gi", "nvidia.com/gpu": "1"},
                    "limits": {"cpu": "250m", "memory": "1Gi", "nvidia.com/gpu": "1"},
                },
            },
            {"name": "c", "image": "a:1"},
        ],
        "volumes": [
            {"name": "scratch", "emptyDir": {}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
            {"name": "token", "projected": {"sources": []}},
        ],
        "resourceClaims": [{"name": "gpu"}],
    },
    "status": {
        "phase": "Running",
        "startTime": "2026-11-22T00:00:05Z",
        "qosClass": "Burstable",
        "conditions": [{"type": "Ready", "status": "True", "message": "ok"}],
        "containerStatuses": [{"name": "a", "restartCount": 3, "ready": True}],
    },
}

RICH_NODE: dict[str, Any] = {
    "metadata": {"name": "n1", "uid": "n-1", "labels": {"zone": "a"}},
    "spec": {
        "unschedulable": True,
        "taints": [{"key": "t", "value": "v", "effect": "NoExecute"}],
    },
    "status": {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "False"}],
        "images": [{"names": ["x"], "sizeBytes": 1}],
    },
}

PENDING_ADDON: dict[str, Any] = {
    "metadata": {
        "name": "dns",
        "namespace": "kube-system",
        "annotations": {"scheduler.alpha.kubernetes.io/critical-pod": ""},
    },
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    "status": {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available",
                "lastTransitionTime": "2026-11-22T00:00:00Z",
            }
        ],
    },
}
"""Unbound and Unschedulable: the only kind of pod that carries ``unschedulableSince``."""

DOWN_NODE: dict[str, Any] = {
    "metadata": {
        "name": "down",
        "annotations": {"kubelet-companion.io/out-of-service": "nodeshutdown", "other": "x"},
    },
    "status": {
        "conditions": [
            {"type": "Ready", "status": "Unknown", "lastTransitionTime": "2026-11-22T00:00:00Z"}
        ],
        "nodeInfo": {"bootID": "b-1", "kernelVersion": "6.1"},
    },
}
"""A NotReady node with its Ready transition time, bootID and an annotation of ours."""

RICH_PDB: dict[str, Any] = {
    "metadata": {"name": "b", "namespace": "shop"},
    "spec": {
        "minAvailable": "50%",
        "selector": {"matchLabels": {"app": "shop"}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    },
    "status": {"disruptionsAllowed": 2, "currentHealthy": 4, "desiredHealthy": 2},
}

RICH_CLAIM: dict[str, Any] = {
    "metadata": {"name": "data-0", "namespace": "shop"},
    "spec": {"storageClassName": "fast", "volumeName": "pv-1"},
}


def _fixture_items() -> dict[str, list[dict[str, Any]]]:
    with gzip.open(CLUSTER_1K) as stream:
        items = json.load(stream)["items"]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_kind.setdefault(item["kind"], []).append(item)
    return by_kind


def _page(items: list[dict[str, Any]]) -> bytes:
    return json.dumps({"metadata": {"resourceVersion": "9"}, "items": items}).encode()


@pytest.fixture(scope="session", name="fixture_items")
def _fixture_items_fixture() -> dict[str, list[dict[str, Any]]]:
    return _fixture_items()


@pytest.mark.parametrize(
    ("kind", "extra"),
    [
        pytest.param("Pod", [RICH_POD, PENDING_ADDON], id="pods"),
        pytest.param("Node", [RICH_NODE, DOWN_NODE], id="nodes"),
        pytest.param("PodDisruptionBudget", [RICH_PDB], id="pdbs"),
        pytest.param("PersistentVolumeClaim", [RICH_CLAIM], id="claims"),
    ],
)
def test_list_pages_project_identically(
    fixture_items: dict[str, list[dict[str, Any]]], kind: str, extra: list[dict[str, Any]]
) -> None:
    """Every object of the parity fixture (plus a rich one) projects the same on both paths."""
    items = fixture_items.get(kind, []) + extra
    data = _page(items)
    by_json = [PROJECT[kind](item) for item in json.loads(data)["items"]]
    page = codec_for(kind).decode_page(data)
    by_wire = [PROJECT[kind](item) for item in page["items"]]
    assert by_wire == by_json
    assert page["metadata"] == {"resourceVersion": "9"}


def test_list_page_keeps_the_continue_token() -> None:
    """A paged list's ``continue`` token survives decoding, so paging goes on."""
    data = json.dumps({"metadata": {"resourceVersion": "9", "continue": "abc"}, "items": []})
    assert codec_for("Pod").decode_page(data.encode())["metadata"]["continue"] == "abc"


def test_decoded_pods_drop_what_no_projection_reads() -> None:
    """managedFields, env and status detail are skipped while decoding, not copied."""
    item = next(iter(codec_for("Pod").decode_page(_page([RICH_POD]))["items"]))
    assert "managedFields" not in item["metadata"]
    assert "env" not in item["spec"]["containers"][0]
    assert "message" not in item["status"]["conditions"][0]


@pytest.mark.parametrize(
    ("kind", "obj"),
    [
        pytest.param("Pod", RICH_POD, id="pod"),
        pytest.param("Node", RICH_NODE, id="node"),
        pytest.param("Pod", PENDING_ADDON, id="pending-addon"),
        pytest.param("Node", DOWN_NODE, id="down-node"),
    ],
)
def test_watch_events_project_identically(kind: str, obj: dict[str, Any]) -> None:
    """A watch event decodes to the type and the same projection as ``json.loads``."""
    line = json.dumps({"type": "MODIFIED", "object": obj}).encode()
    event = codec_for(kind).decode_event(line)
    assert event["type"] == "MODIFIED"
    assert PROJECT[kind](event["object"]) == PROJECT[kind](json.loads(line)["object"])


def test_watch_error_event_keeps_the_status() -> None:
    """An ERROR event carries a Status, not an object of the kind: its code must survive."""
    status = {"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"}
    line = json.dumps({"type": "ERROR", "object": status}).encode()
    assert codec_for("Pod").decode_event(line) == {"type": "ERROR", "object": status}


def test_malformed_bytes_are_a_value_error() -> None:
    """Garbled bytes raise ValueError, which the adapter treats as a transport failure."""
    with pytest.raises(ValueError, match="truncated"):
        codec_for("Pod").decode_page(b'{"items": [')
