"""What kind of pod this is, read the way kubelet reads it: one copy for every capability.

Several capabilities decide by the same facts (shutdown skips mirror, static and DaemonSet
pods; the swap audit treats mirror, static and high-priority pods as critical), and a rule
that drifts between them is a bug waiting to happen. The annotations are kubelet's
(``kubetypes.ConfigMirrorAnnotationKey`` and ``ConfigSourceAnnotationKey``).

Pure: plain dicts in, answers out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.kubesemantics.wellknown import DAEMON_SET_KIND, FINISHED_PHASES

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
"""Set by kubelet on the API's mirror of a static pod (the value is the static pod's UID)."""
SOURCE_ANNOTATION = "kubernetes.io/config.source"
API_SOURCE = "api"
"""``config.source`` of pods that came from the API server; anything else is static."""

Pod = Mapping[str, Any]


def _annotations(pod: Pod) -> Mapping[str, Any]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def is_mirror_pod(pod: Pod) -> bool:
    """kubelet's ``IsMirrorPod``: the mirror annotation is present."""
    return MIRROR_ANNOTATION in _annotations(pod)


def is_static_pod(pod: Pod) -> bool:
    """kubelet's ``IsStaticPod``: a config source other than the API server."""
    return bool(_annotations(pod).get(SOURCE_ANNOTATION, API_SOURCE) != API_SOURCE)


def is_daemon_set_pod(pod: Pod) -> bool:
    """The pod's controlling owner is a DaemonSet."""
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(
        owner.get("kind") == DAEMON_SET_KIND and owner.get("controller") is True for owner in owners
    )


def controller_uid(pod: Pod) -> str | None:
    """The UID of the pod's controlling owner (``controller: true``), or ``None``.

    Owners are matched by UID, never by name: names are reused, UIDs are not.
    """
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            return str(owner.get("uid") or "") or None
    return None


def being_deleted(obj: Pod) -> bool:
    """The object carries a ``deletionTimestamp``: it is on its way out."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def is_finished(pod: Pod) -> bool:
    """The pod ran to an end (``Succeeded`` or ``Failed``): nothing in it runs any more."""
    return (pod.get("status") or {}).get("phase") in FINISHED_PHASES


def pod_priority(pod: Pod) -> int:
    """``spec.priority``; missing (or not an integer) counts as 0, as in kubelet."""
    value = (pod.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
