"""Which NodeState events call for a swap audit now: the ones that change what it reads.

A full audit walks the kubepods tree and recomputes every container's limit: milliseconds
for a full node, in a worker thread. Most pod events on a busy node are status updates that
touch nothing the audit reads (Ready flips, conditions, a deletion timestamp); auditing on
each of them was the agent's largest CPU cost under pod churn (``scripts/benchmarks/
footprint.py``, BENCHMARKS.md). So a pod event wakes the audit only when a pod with a
running container (one with a runtime ID: it has a cgroup to audit) came or went, or its
audit view (``pod_view``: UIDs, QoS, each container's memory and runtime ID) changed.
Everything else waits for the timer (``memorySwap.auditInterval``), which also catches
cgroup changes that no API event shows.

Called on the event loop (NodeState's listeners), so the remembered views need no lock.
"""

from __future__ import annotations

from agent.kube.api import JsonObject
from agent.swap.pods import PodView, pod_view


def wakes_audit(obj: JsonObject | None) -> bool:
    """Whether a NodeState event may call for an audit: pod changes may; Node changes (our
    own label patches come back as Node events) wait for the timer."""
    return obj is None or obj.get("kind") != "Node"


def _key(obj: JsonObject) -> str:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}")


class AuditInputs:
    """The audit view of each pod last audited or seen, to tell real changes from noise."""

    def __init__(self) -> None:
        # Each pod's object as last seen, with its view. The reflector replaces an object on
        # every change and never mutates it, so the same object means the same view: an
        # audit's ``remember`` recomputes views only for pods that changed since.
        self._views: dict[str, tuple[JsonObject, PodView]] = {}

    def remember(self, pods: list[JsonObject]) -> None:
        """The pods an audit is about to read: their later events are compared with these."""
        views = {}
        for pod in pods:
            key = _key(pod)
            seen = self._views.get(key)
            views[key] = seen if seen is not None and seen[0] is pod else (pod, pod_view(pod))
        self._views = views

    def changed(self, kind: str, obj: JsonObject | None) -> bool:
        """Whether this event changes what the audit reads (and remember the pod's view)."""
        if not wakes_audit(obj):
            return False
        if obj is None:  # a relist: anything may have changed
            return True
        key = _key(obj)
        if kind == "DELETED":
            seen = self._views.pop(key, None)
            return _running(seen[1] if seen is not None else pod_view(obj))
        view = pod_view(obj)
        seen = self._views.get(key)
        self._views[key] = (obj, view)
        if seen is None:
            return _running(view)
        before = seen[1]
        return before != view and (_running(before) or _running(view))


def _running(view: PodView) -> bool:
    """Whether any container of the pod has a runtime ID: only those have a cgroup to audit
    (a pending pod's first event, or its deletion before it ever ran, changes nothing)."""
    return any(container.container_id for container in view.containers)
