"""The readiness tests' node: their defaults for the shared builders of Nodes, DaemonSets,
pods and CSINodes.

Shared by the readiness unit and integration tests and the readiness benchmark, so all
describe a node the same way. Defaults, stated once here: ``node-1``, carrying the gate's
taint and labelled with its hostname; critical DaemonSets in ``kube-system`` that tolerate
everything (like most CNI plugins); critical pods there, Running, Ready and scheduled on
``node-1``, each with a fresh uid (a pod made again is a new pod). A daemon pod names its
DaemonSet with ``owner=controller_ref(ds)``.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping
from typing import Any

from agent.readiness.presets import PRESETS, GateKeys
from tests.harness import kubeobjects
from tests.harness.kubeobjects import PAUSE_IMAGE

JSON = dict[str, Any]
KEYS: GateKeys = PRESETS["default"]
GATE = KEYS.taint
CRITICAL = {KEYS.label: "true"}


def taint(key: str = GATE, effect: str = "NoSchedule", value: str | None = None) -> JSON:
    """``kubeobjects.taint``, the gate's own by default."""
    return kubeobjects.taint(key, effect, value)


NODE_DEFAULTS: Mapping[str, Any] = {
    "taints": (taint(),),
    "resource_version": "1",
    "created": "2025-01-01T00:00:00Z",
}
DAEMON_SET_DEFAULTS: Mapping[str, Any] = {
    "namespace": "kube-system",
    "labels": CRITICAL,
    "containers": ("main",),
    "image": PAUSE_IMAGE,
    "tolerations": ({"operator": "Exists"},),
}
POD_DEFAULTS: Mapping[str, Any] = {
    "node": "node-1",
    "namespace": "kube-system",
    "labels": CRITICAL,
    "containers": ("main",),
    "image": PAUSE_IMAGE,
    "phase": "Running",
    "scheduled": True,
    "ready": True,
}


def node(name: str = "node-1", *, labels: Mapping[str, str] | None = None, **fields: Any) -> JSON:
    """``kubeobjects.node`` with ``NODE_DEFAULTS``, its hostname label and ``labels``."""
    labels = {"kubernetes.io/hostname": name, **(labels or {})}
    return kubeobjects.node(
        name, **{"uid": f"uid-{name}", **NODE_DEFAULTS, **fields}, labels=labels
    )


def daemon_set(name: str, **fields: Any) -> JSON:
    """``kubeobjects.daemon_set`` with ``DAEMON_SET_DEFAULTS``; ``fields`` override them."""
    return kubeobjects.daemon_set(
        name, **{"uid": f"uid-ds-{name}", **DAEMON_SET_DEFAULTS, **fields}
    )


def pod(name: str, **fields: Any) -> JSON:
    """``kubeobjects.pod`` with ``POD_DEFAULTS``; ``fields`` override them."""
    uid = f"uid-pod-{name}-{uuid.uuid4().hex[:6]}"
    return kubeobjects.pod(name, **{"uid": uid, **POD_DEFAULTS, **fields})


csinode = functools.partial(kubeobjects.csinode, "node-1")
