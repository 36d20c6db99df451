"""Pod facts every capability reads the same way: mirror, static, DaemonSet-owned, priority."""

from __future__ import annotations

from typing import Any

import pytest

from agent.kubesemantics.pods import (
    is_daemon_set_pod,
    is_finished,
    is_mirror_pod,
    is_static_pod,
    pod_priority,
)


def pod(
    *,
    annotations: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    priority: object = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {} if priority is None else {"priority": priority}
    metadata: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if annotations is not None:
        metadata["annotations"] = annotations
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {"metadata": metadata, "spec": spec}


@pytest.mark.parametrize(
    ("annotations", "mirror", "static"),
    [
        (None, False, False),
        ({"kubernetes.io/config.source": "api"}, False, False),
        ({"kubernetes.io/config.source": "file"}, False, True),
        ({"kubernetes.io/config.source": "http"}, False, True),
        ({"kubernetes.io/config.mirror": "abc", "kubernetes.io/config.source": "api"}, True, False),
    ],
)
def test_mirror_and_static_pods_follow_kubelets_annotations(
    annotations: dict[str, str] | None, mirror: bool, static: bool
) -> None:
    """Mirror: the config.mirror annotation; static: a config.source other than "api"."""
    assert is_mirror_pod(pod(annotations=annotations)) is mirror
    assert is_static_pod(pod(annotations=annotations)) is static


@pytest.mark.parametrize(
    ("owners", "expected"),
    [
        (None, False),
        ([{"kind": "DaemonSet", "controller": True}], True),
        ([{"kind": "DaemonSet"}], False),  # an owner, but not the controller
        ([{"kind": "ReplicaSet", "controller": True}], False),
    ],
)
def test_daemon_set_pods_are_controlled_by_a_daemon_set(
    owners: list[dict[str, Any]] | None, expected: bool
) -> None:
    """Only a DaemonSet that is the pod's controller makes it a DaemonSet pod."""
    assert is_daemon_set_pod(pod(owners=owners)) is expected


@pytest.mark.parametrize(
    ("priority", "expected"), [(None, 0), (7, 7), (-3, -3), (True, 0), ("9", 0)]
)
def test_priority_defaults_to_zero(priority: object, expected: int) -> None:
    """spec.priority as an int; missing or malformed counts as 0, as kubelet reads it."""
    assert pod_priority(pod(priority=priority)) == expected


def test_finished_pods_are_succeeded_or_failed() -> None:
    """Succeeded and Failed are finished; Running, Pending and no phase are not."""
    phases = ["Succeeded", "Failed", "Running", "Pending", None]
    assert [is_finished({"status": {"phase": p}}) for p in phases] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert not is_finished({})
