"""One phase's pods: when a pod counts as gone, and which pods get a delete at the deadline."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agent.shutdown.phase_pods import PhasePods
from agent.shutdown.phases import PodTarget
from agent.shutdown.terminate import Outcome
from tests.harness import kubeobjects

TARGET = PodTarget(
    namespace="ns", name="web-0", uid="uid-old", priority=0, grace_seconds=5, bucket=0
)


class NodeStateDouble:
    """NodeState as PhasePods reads it: pods by key, a version, and change notification."""

    def __init__(self, pods: dict[str, dict[str, Any]]) -> None:
        self.pods = pods
        self.version = 0

    async def wait_changed(self, version: int, timeout: float) -> None:  # noqa: ARG002 - NodeState's signature
        await asyncio.sleep(timeout)


def phase(state: NodeStateDouble, *, evict: bool) -> PhasePods:
    return PhasePods(
        (TARGET,),
        node_state=state,  # type: ignore[arg-type]
        kube=None,  # type: ignore[arg-type]  # nothing is sent in these tests
        evict=evict,
        monotonic=time.monotonic,
        now=time.time,
    )


def pod(uid: str) -> dict[str, Any]:
    """``ns/web-0`` as it is now: ``uid`` tells it from an earlier pod of that name."""
    return kubeobjects.pod("web-0", namespace="ns", uid=uid)


async def test_a_pod_recreated_under_the_same_name_counts_as_gone() -> None:
    """A StatefulSet pod back under the same name (another uid) is not the one we wait for."""
    pods = phase(NodeStateDouble({"ns/web-0": pod("uid-new")}), evict=False)
    assert not pods.present(TARGET)
    assert await pods.wait_gone(time.monotonic() + 5)


async def test_our_pod_still_there_holds_the_phase_to_its_deadline() -> None:
    """The pod we asked to stop, still listed under its uid, keeps the phase waiting."""
    pods = phase(NodeStateDouble({"ns/web-0": pod("uid-old")}), evict=False)
    assert not await pods.wait_gone(time.monotonic() + 0.05)


@pytest.mark.parametrize(
    ("outcome", "deleted_at_deadline"),
    [
        pytest.param(None, True, id="unanswered"),
        pytest.param(Outcome.BLOCKED, True, id="pdb-blocked"),
        pytest.param(Outcome.FAILED, True, id="eviction-and-delete-refused"),
        pytest.param(Outcome.REQUESTED, False, id="accepted"),
        pytest.param(Outcome.GONE, False, id="gone"),
    ],
)
def test_evict_mode_deletes_at_the_deadline_every_pod_no_request_is_ending(
    outcome: Outcome | None, deleted_at_deadline: bool
) -> None:
    """At the deadline, evict mode deletes each pod still here without an accepted request."""
    pods = phase(NodeStateDouble({"ns/web-0": pod("uid-old")}), evict=True)
    if outcome is not None:
        pods.outcomes[TARGET.key] = outcome
    assert (pods.undeleted() == [TARGET]) is deleted_at_deadline


def test_delete_mode_sends_no_second_round() -> None:
    """Delete mode retried its deletes up to the deadline; nothing more is sent then."""
    pods = phase(NodeStateDouble({"ns/web-0": pod("uid-old")}), evict=False)
    pods.outcomes[TARGET.key] = Outcome.FAILED
    assert pods.undeleted() == []
