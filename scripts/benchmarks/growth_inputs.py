"""The hostile inputs of the growth benchmark, each at a chosen size.

- ``gzip_members``: a snapshot file of N MB of empty gzip members (20 bytes each): gzip(1)
  reads such a file as one empty stream, and a reader that copies the rest of the file for
  every member spends N x N.
- ``quantity_snapshot``: a List with two nodes, one of whose ``allocatable.cpu`` is a
  quantity of N digits (``1.111...``: a small exponent, so a bound on exponents alone does
  not refuse it).
- ``antiaffinity_objects``: P pods in one namespace on 99 nodes in 3 zones (33 each), each with 20
  required anti-affinity terms, as a tenant allowed to create pods in one namespace may
  write them. Pod ``i`` carries ``peer=p<i>`` and its term ``k`` selects ``peer=p<i+k>``
  (by hostname, every third by zone): a pod on another node, in another zone, so a pairwise
  check reads every pod of the namespace for every term and finds nothing; every tenth pod's
  last term selects the pod 99 places on, on its own node, so a tenth of the pods violate
  and the plan places their replacements. Owned by ConfigMaps (``owner-<i % 50>``): a real
  API server's garbage collector keeps pods whose owner exists, and no controller acts on
  them.

Every object is API JSON as a client creates it (the API server adds the rest); the same
objects are loaded into a real API server for upstream's run and written as a snapshot file
for ours, so both read the same state.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

from scripts.benchmarks.livecluster.nodes import CAPACITY, node_body, node_name

EMPTY_MEMBER = gzip.compress(b"", mtime=0)
NAMESPACE = "tenant"
NODES = 99
OWNERS = 50
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
POLICY = """\
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
- name: default
  pluginConfig:
  - name: "DefaultEvictor"
  - name: "RemovePodsViolatingInterPodAntiAffinity"
  plugins:
    deschedule:
      enabled:
      - "RemovePodsViolatingInterPodAntiAffinity"
"""
"""The one plugin, DefaultEvictor's defaults (``nodeFit`` off), as upstream reads it too."""


def gzip_members(megabytes: float) -> bytes:
    """``megabytes`` MB of empty gzip members."""
    return EMPTY_MEMBER * int(megabytes * 2**20 // len(EMPTY_MEMBER))


def _listed(items: list[dict[str, Any]]) -> bytes:
    return json.dumps(
        {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
    ).encode()


def _node(index: int) -> dict[str, Any]:
    node = node_body(index, cordoned=False)
    node["status"] = {
        "capacity": dict(CAPACITY),
        "allocatable": dict(CAPACITY),
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    return node


def quantity_snapshot(digits: int) -> bytes:
    """Two Ready nodes; the first's allocatable cpu has ``digits`` digits."""
    hostile = _node(0)
    hostile["status"]["allocatable"]["cpu"] = "1." + "1" * (digits - 1)
    return _listed([hostile, _node(1)])


def owner_name(index: int) -> str:
    return f"owner-{index % OWNERS:02d}"


def antiaffinity_pod(index: int, pods: int, terms: int, owner_uid: str) -> dict[str, Any]:
    """Pod ``index`` of ``pods``, bound to its node (see the module docstring)."""
    required = []
    for k in range(1, terms + 1):
        target, key = (index + k) % pods, ZONE if k % 3 == 1 else HOST
        if k == terms and index % 10 == 0:
            target, key = (index + NODES) % pods, HOST
        required.append(
            {"topologyKey": key, "labelSelector": {"matchLabels": {"peer": f"p{target}"}}}
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{index:05d}",
            "namespace": NAMESPACE,
            "labels": {"app": "hostile", "peer": f"p{index}"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": owner_name(index),
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node_name(index % NODES),
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
            },
        },
    }


def antiaffinity_nodes() -> list[dict[str, Any]]:
    return [_node(index) for index in range(NODES)]


def antiaffinity_snapshot(pods: int, terms: int) -> bytes:
    """The nodes, the namespace and the pods as one List (owners by made-up uid: a snapshot
    does not read ConfigMaps)."""
    items: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        *antiaffinity_nodes(),
    ]
    for index in range(pods):
        pod = antiaffinity_pod(index, pods, terms, f"uid-{owner_name(index)}")
        pod["metadata"]["uid"] = f"uid-pod-{index:05d}"
        pod["status"] = {"phase": "Pending"}
        items.append(pod)
    return _listed(items)
