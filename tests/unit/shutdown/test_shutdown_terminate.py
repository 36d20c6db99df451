"""Terminating one pod: retries bounded by the deadline, and what each API answer means."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agent.kube.backoff import Backoff
from agent.kube.errors import Conflict, Forbidden, KubeError, NotFound, TooManyRequests, Unavailable
from agent.kube.resources import Resource
from agent.shutdown.phases import PodTarget
from agent.shutdown.terminate import Outcome, delete_pod, evict_pod

TARGET = PodTarget(namespace="ns", name="web", uid="u-1", priority=0, grace_seconds=7)
FAST = Backoff(initial=0.01, factor=2.0, cap=0.05, jitter=0.0)


class ScriptedApi:
    """Answers each call with the next scripted error (or success), and records the calls."""

    def __init__(self, *answers: KubeError | None) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _answer(self) -> dict[str, Any]:
        answer = self.answers.pop(0) if self.answers else self.answers_default
        if answer is not None:
            raise answer
        return {}

    answers_default: KubeError | None = None

    async def delete(self, resource: Resource, name: str, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        self.calls.append(("delete", {"name": name, **kwargs}))
        return self._answer()

    async def evict(self, name: str, namespace: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("evict", {"name": name, "namespace": namespace, **kwargs}))
        return self._answer()


async def test_delete_sends_grace_and_uid_precondition() -> None:
    """A delete names the pod, carries its grace period and a uid precondition."""
    api = ScriptedApi(None)
    outcome = await delete_pod(api, TARGET, deadline=time.monotonic() + 5, monotonic=time.monotonic)
    assert outcome is Outcome.REQUESTED
    assert api.calls == [
        (
            "delete",
            {
                "name": "web",
                "namespace": "ns",
                "grace_period_seconds": 7,
                "preconditions": {"uid": "u-1"},
            },
        )
    ]


async def test_delete_retries_server_errors_until_accepted() -> None:
    """5xx and 429 answers are retried with backoff until the delete is accepted."""
    api = ScriptedApi(Unavailable("503"), TooManyRequests("429"), None)
    outcome = await delete_pod(
        api, TARGET, deadline=time.monotonic() + 5, monotonic=time.monotonic, backoff=FAST
    )
    assert outcome is Outcome.REQUESTED
    assert len(api.calls) == 3


@pytest.mark.parametrize("error", [NotFound("gone"), Conflict("uid precondition failed")])
async def test_delete_of_a_pod_already_gone_counts_as_gone(error: KubeError) -> None:
    """404, or a failed uid precondition (the name is someone else's now): our pod is gone."""
    outcome = await delete_pod(
        ScriptedApi(error), TARGET, deadline=time.monotonic() + 5, monotonic=time.monotonic
    )
    assert outcome is Outcome.GONE


async def test_delete_gives_up_at_the_deadline() -> None:
    """An API server that keeps failing cannot hold the delete past its deadline."""
    api = ScriptedApi()
    api.answers_default = Unavailable("down")
    began = time.monotonic()
    outcome = await delete_pod(
        api, TARGET, deadline=began + 0.3, monotonic=time.monotonic, backoff=FAST
    )
    assert outcome is Outcome.FAILED
    assert time.monotonic() - began < 1.0
    assert len(api.calls) >= 3


async def test_delete_that_hangs_is_abandoned_at_the_deadline() -> None:
    """A call that never answers is cut off at the deadline."""

    class Hanging(ScriptedApi):
        async def delete(self, resource: Resource, name: str, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
            await asyncio.sleep(30)
            return {}

    began = time.monotonic()
    outcome = await delete_pod(Hanging(), TARGET, deadline=began + 0.2, monotonic=time.monotonic)
    assert outcome is Outcome.FAILED
    assert time.monotonic() - began < 1.0


async def test_evict_retries_a_pdb_refusal_until_the_deadline() -> None:
    """A PDB's 429 is retried while the pod is still here; at the deadline it is BLOCKED."""
    api = ScriptedApi()
    api.answers_default = TooManyRequests(
        "Cannot evict pod as it would violate the pod's disruption budget."
    )
    began = time.monotonic()
    outcome = await evict_pod(
        api,
        TARGET,
        deadline=began + 0.3,
        monotonic=time.monotonic,
        still_present=lambda: True,
        backoff=FAST,
    )
    assert outcome is Outcome.BLOCKED
    assert len(api.calls) >= 3
    assert api.calls[0] == ("evict", {"name": "web", "namespace": "ns", "grace_period_seconds": 7})


async def test_evict_stops_when_the_pod_left_meanwhile() -> None:
    """Once NodeState no longer has our pod, no further eviction is sent for its name."""
    api = ScriptedApi(TooManyRequests("pdb"))
    present = iter([True, False])
    outcome = await evict_pod(
        api,
        TARGET,
        deadline=time.monotonic() + 5,
        monotonic=time.monotonic,
        still_present=lambda: next(present),
        backoff=FAST,
    )
    assert outcome is Outcome.GONE
    assert len(api.calls) == 1


async def test_evict_refused_outright_reports_failed() -> None:
    """A 403 (evictions not allowed) is not retried: the caller deletes instead."""
    outcome = await evict_pod(
        ScriptedApi(Forbidden("no")),
        TARGET,
        deadline=time.monotonic() + 5,
        monotonic=time.monotonic,
        still_present=lambda: True,
    )
    assert outcome is Outcome.FAILED
