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

It also keeps what the incremental audit needs: the cgroup UIDs of every pod whose view or
finished state changed since the last audit (woken or not), and the views themselves, so
no audit rebuilds the view of a pod that did not change.

Called on the event loop (NodeState's listeners), so the remembered views need no lock;
the audit's worker thread gets a list of its own (``views``).
"""

from __future__ import annotations

from agent.kube.jsontypes import JsonObject
from agent.kubesemantics.pods import is_finished
from agent.swap.pods import PodView, pod_view


def wakes_audit(obj: JsonObject | None) -> bool:
    """Whether a NodeState event may call for an audit: pod changes may; Node changes (our
    own label patches come back as Node events) wait for the timer."""
    return obj is None or obj.get("kind") != "Node"


def _key(obj: JsonObject) -> str:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}")


class AuditInputs:
    """The audit view of each pod last audited or seen, to tell real changes from noise,
    and the cgroup UIDs of the pods that changed since the last audit (what an incremental
    audit must read again)."""

    def __init__(self) -> None:
        # Each pod's object as last seen, with its view and whether it had finished. The
        # reflector replaces an object on every change and never mutates it, so the same
        # object means the same view: ``remember`` recomputes views only for pods that
        # changed since.
        self._views: dict[str, tuple[JsonObject, PodView, bool]] = {}
        self._changed: set[str] = set()
        self._relisted = False

    def remember(self, pods: list[JsonObject]) -> frozenset[str] | None:
        """The pods an audit is about to read: their later events are compared with these.

        Returns the cgroup UIDs (before and after) of every pod whose audit view or finished
        state changed since the last call, or that came or went; ``None`` after a relist,
        when anything may have changed. A change no event announced is found here too.
        """
        views = {}
        changed = self._changed
        for pod in pods:
            key = _key(pod)
            seen = self._views.pop(key, None)
            if seen is not None and seen[0] is pod:
                views[key] = seen
                continue
            views[key] = now = (pod, pod_view(pod), is_finished(pod))
            if seen is None or seen[1:] != now[1:]:
                changed |= now[1].cgroup_uids
                if seen is not None:
                    changed |= seen[1].cgroup_uids
        for gone in self._views.values():
            changed |= gone[1].cgroup_uids
        self._views = views
        result = None if self._relisted else frozenset(changed)
        self._changed = set()
        self._relisted = False
        return result

    def views(self, pods: list[JsonObject]) -> list[PodView]:
        """Each pod's audit view, as remembered (right after ``remember``, every one is).

        A new list: the audit reads it in a worker thread while events change ours."""
        views = []
        for pod in pods:
            seen = self._views.get(_key(pod))
            views.append(seen[1] if seen is not None and seen[0] is pod else pod_view(pod))
        return views

    def changed(self, kind: str, obj: JsonObject | None) -> bool:
        """Whether this event calls for an audit now (and remember the pod's view)."""
        if not wakes_audit(obj):
            return False
        if obj is None:  # a relist: anything may have changed
            self._relisted = True
            return True
        key = _key(obj)
        if kind == "DELETED":
            seen = self._views.pop(key, None)
            view = seen[1] if seen is not None else pod_view(obj)
            self._changed |= view.cgroup_uids
            return _running(view)
        view = pod_view(obj)
        now = (obj, view, is_finished(obj))
        seen = self._views.get(key)
        self._views[key] = now
        if seen is None:
            self._changed |= view.cgroup_uids
            return _running(view)
        if seen[1:] != now[1:]:
            self._changed |= view.cgroup_uids | seen[1].cgroup_uids
        before = seen[1]
        return before != view and (_running(before) or _running(view))


def _running(view: PodView) -> bool:
    """Whether any container of the pod has a runtime ID: only those have a cgroup to audit
    (a pending pod's first event, or its deletion before it ever ran, changes nothing)."""
    return any(container.container_id for container in view.containers)
