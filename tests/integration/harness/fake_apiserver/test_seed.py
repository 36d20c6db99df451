"""The fake API server's bulk seed: the state ``create`` one by one gives, in a fraction of the
time (the PDB controller runs once per namespace instead of after every write)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.fake_apiserver.status import ApiError
from tests.harness.kubeobjects import pdb, pod

JSON = dict[str, Any]
VOLATILE = ("uid", "creationTimestamp", "resourceVersion")


def _running(name: str, namespace: str, *, ready: bool = True) -> JSON:
    return pod(
        name, "node-a", namespace=namespace, labels={"app": "web"}, phase="Running", ready=ready
    )


def _objects() -> list[JSON]:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    return [
        namespace,
        pdb("before-pods", namespace="team", match_labels={"app": "web"}, min_available=2),
        *(_running(f"web-{i}", "team", ready=i != 3) for i in range(4)),
        *(_running(f"web-{i}", "default") for i in range(3)),
        pdb("after-pods", match_labels={"app": "web"}, max_unavailable=1),
    ]


def _state(server: FakeApiServer) -> list[JSON]:
    found = []
    for resource in ("namespaces", "pods", "poddisruptionbudgets"):
        for obj in server.list(resource):
            metadata = {k: v for k, v in obj["metadata"].items() if k not in VOLATILE}
            found.append({**obj, "metadata": metadata})
    return found


def test_seed_gives_the_state_of_one_create_at_a_time() -> None:
    """Every object, every PDB status and the number of writes are what ``create`` gives."""
    with FakeApiServer() as one_by_one, FakeApiServer() as seeded:
        for obj in _objects():
            one_by_one.create(obj)
        before = int(seeded.resource_version)
        count = seeded.seed(_objects())
        assert count == len(_objects())
        assert _state(seeded) == _state(one_by_one)
        status = seeded.get("poddisruptionbudgets", "before-pods", "team")["status"]
        assert (status["currentHealthy"], status["disruptionsAllowed"]) == (3, 1)
        # One commit per object, plus one status write per PDB by the controller.
        assert int(seeded.resource_version) - before == count + 2


def test_seed_rejects_what_create_rejects() -> None:
    """An object ``create`` refuses (its namespace does not exist) fails the seed too."""
    with FakeApiServer() as server, pytest.raises(ApiError) as refused:
        server.seed([_running("web-0", "missing")])
    assert refused.value.code == 404
