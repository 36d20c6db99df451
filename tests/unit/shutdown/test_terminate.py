"""Terminating one pod: retries bounded by the deadline, and what each API answer means."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any

import pytest

from agent.kube.backoff import Backoff
from agent.kube.errors import Conflict, Forbidden, KubeError, NotFound, TooManyRequests, Unavailable
from agent.kube.resources import Resource
from agent.shutdown.phases import PodTarget
from agent.shutdown.terminate import (
    MARK_ATTEMPTS,
    Outcome,
    delete_pod,
    disruption_patch,
    evict_pod,
    mark_disruption,
    mark_then_delete,
)

TARGET = PodTarget(namespace="ns", name="web", uid="u-1", priority=0, grace_seconds=7, bucket=0)
FAST = Backoff(initial=0.01, factor=2.0, cap=0.05, jitter=0.0)
FIXED_NOW = 1_790_000_000.0


class ScriptedApi:
    """Answers each call with the next scripted error (or success), and records the calls
    (their per-call ``timeout`` apart, in ``timeouts``)."""

    def __init__(self, *answers: KubeError | None) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.timeouts: list[float] = []
        self.patches: list[dict[str, Any]] = []

    def _record(self, verb: str, kwargs: dict[str, Any]) -> None:
        self.timeouts.append(kwargs.pop("timeout"))
        self.calls.append((verb, kwargs))

    def _answer(self) -> dict[str, Any]:
        answer = self.answers.pop(0) if self.answers else self.answers_default
        if answer is not None:
            raise answer
        return {}

    answers_default: KubeError | None = None

    async def delete(self, resource: Resource, name: str, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
        self._record("delete", {"name": name, **kwargs})
        return self._answer()

    async def evict(self, name: str, namespace: str, **kwargs: Any) -> dict[str, Any]:
        self._record("evict", {"name": name, "namespace": namespace, **kwargs})
        return self._answer()

    async def patch(
        self, resource: Resource, name: str, patch: Any, **kwargs: Any
    ) -> dict[str, Any]:
        self._record("patch", {"resource": resource.plural, "name": name, **kwargs})
        self.patches.append(patch)
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


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(Forbidden("evictions are not allowed"), id="403"),
        pytest.param(NotFound("the server could not find the requested resource"), id="404"),
    ],
)
async def test_evict_refused_outright_reports_failed(error: KubeError) -> None:
    """A 403 or a 404 (perhaps of the subresource, not the pod) is not retried: the caller
    deletes instead, and the delete's own answer tells whether the pod is gone."""
    outcome = await evict_pod(
        ScriptedApi(error),
        TARGET,
        deadline=time.monotonic() + 5,
        monotonic=time.monotonic,
        still_present=lambda: True,
    )
    assert outcome is Outcome.FAILED


@pytest.mark.parametrize("verb", ["delete", "evict"])
async def test_each_call_is_bounded_by_the_time_left(verb: str) -> None:
    """Every request carries the time left before the deadline as its own timeout."""
    api = ScriptedApi(Unavailable("503"), None)
    began = time.monotonic()
    if verb == "delete":
        await delete_pod(api, TARGET, deadline=began + 2, monotonic=time.monotonic, backoff=FAST)
    else:
        await evict_pod(
            api,
            TARGET,
            deadline=began + 2,
            monotonic=time.monotonic,
            still_present=lambda: True,
            backoff=FAST,
        )
    assert len(api.timeouts) == 2
    assert all(0 < timeout <= 2 for timeout in api.timeouts)
    assert api.timeouts[1] < api.timeouts[0]  # the retry had less time left


def test_disruption_patch_is_kubelets_node_shutdown_condition() -> None:
    """The status patch adds kubelet's DisruptionTarget condition, with the pod's uid."""
    patch = disruption_patch(TARGET, 1_790_000_000.0)
    assert patch == {
        "metadata": {"uid": "u-1"},
        "status": {
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "TerminationByKubelet",
                    "message": "Pod was terminated in response to imminent node shutdown.",
                    "lastTransitionTime": "2026-09-21T14:13:20Z",
                }
            ]
        },
    }


async def test_mark_sends_a_strategic_status_patch() -> None:
    """The condition goes to pods/status as a strategic merge patch."""
    api = ScriptedApi(None)
    marked = await mark_disruption(
        api, TARGET, deadline=time.monotonic() + 5, monotonic=time.monotonic, now=lambda: FIXED_NOW
    )
    assert marked
    assert api.patches == [disruption_patch(TARGET, FIXED_NOW)]
    assert 0 < api.timeouts[0] <= 5  # bounded like every call of the phase
    assert api.calls == [
        (
            "patch",
            {
                "resource": "pods",
                "name": "web",
                "patch_type": "strategic",
                "namespace": "ns",
                "subresource": "status",
            },
        )
    ]


async def test_a_failed_mark_is_reported_not_raised() -> None:
    """A refused status patch (e.g. RBAC) is logged and reported, never raised."""
    marked = await mark_disruption(
        ScriptedApi(Forbidden("pods/status")),
        TARGET,
        deadline=time.monotonic() + 5,
        monotonic=time.monotonic,
        now=time.time,
    )
    assert not marked


async def test_a_hanging_mark_does_not_hold_up_the_delete() -> None:
    """A status patch that never answers delays the delete by the head start at most."""

    class HangingPatch(ScriptedApi):
        async def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:  # noqa: ARG002 - AsyncKube's signature
            await asyncio.Event().wait()
            return {}  # pragma: no cover - never reached

    api = HangingPatch(None)
    spawned: list[asyncio.Task[object]] = []

    def spawn(coroutine: Coroutine[object, object, object]) -> asyncio.Task[object]:
        spawned.append(asyncio.get_running_loop().create_task(coroutine))
        return spawned[-1]

    outcome = await mark_then_delete(
        api,
        TARGET,
        deadline=time.monotonic() + 30,
        monotonic=time.monotonic,
        now=time.time,
        spawn=spawn,
        head_start=0.05,
    )
    assert outcome is Outcome.REQUESTED
    assert [verb for verb, _ in api.calls] == ["delete"]
    assert not spawned[0].done()  # still hanging, on its own
    spawned[0].cancel()


async def test_a_mark_retries_briefly_then_gives_up() -> None:
    """A 503 on the status patch is retried; after MARK_ATTEMPTS tries the mark is dropped."""
    flaky = ScriptedApi(Unavailable("503"), None)
    deadline = time.monotonic() + 5
    assert await mark_disruption(
        flaky, TARGET, deadline=deadline, monotonic=time.monotonic, now=time.time, backoff=FAST
    )
    assert len(flaky.calls) == 2
    down = ScriptedApi()
    down.answers_default = Unavailable("503")
    assert not await mark_disruption(
        down, TARGET, deadline=deadline, monotonic=time.monotonic, now=time.time, backoff=FAST
    )
    assert len(down.calls) == MARK_ATTEMPTS


async def test_the_mark_gets_its_head_start_before_the_delete() -> None:
    """With a quick API server the condition is written before the delete goes out."""
    api = ScriptedApi(None, None)

    def spawn(coroutine: Coroutine[object, object, object]) -> asyncio.Task[object]:
        return asyncio.get_running_loop().create_task(coroutine)

    await mark_then_delete(
        api,
        TARGET,
        deadline=time.monotonic() + 30,
        monotonic=time.monotonic,
        now=time.time,
        spawn=spawn,
    )
    assert [verb for verb, _ in api.calls] == ["patch", "delete"]


@pytest.mark.parametrize("verb", ["delete", "evict"])
async def test_retries_are_ended_by_the_deadline_not_by_a_count(verb: str) -> None:
    """An API server that keeps failing is retried as often as the deadline allows."""
    api = ScriptedApi()
    api.answers_default = Unavailable("503")
    deadline = time.monotonic() + 0.6
    if verb == "delete":
        await delete_pod(api, TARGET, deadline=deadline, monotonic=time.monotonic, backoff=FAST)
    else:
        await evict_pod(
            api,
            TARGET,
            deadline=deadline,
            monotonic=time.monotonic,
            still_present=lambda: True,
            backoff=FAST,
        )
    assert len(api.calls) > 6  # the adapter's default attempt count
