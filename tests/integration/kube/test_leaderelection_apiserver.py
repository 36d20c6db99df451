"""Leader election through the official client against the fake API server's Leases.

The requests are real. Where a test is about time (leases lapsing, renew deadlines), the
electors' time is a hand clock, moved a retry period at a time and only once every elector
has answered for the last step (its read is in the server's log): a lease lapses or a renew
deadline passes because the test moved time, never because the machine was slow, and seconds
of leases take a fraction of one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agent.clock import Clock, SystemClock
from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.connection import connect
from agent.kube.errors import NotFound
from agent.kube.evictionmemory import RecentEvictionsMemory
from agent.kube.leaderelection import ElectionTiming, LeaderElector
from agent.kube.lease import KubeLeaseApi
from agent.kube.resources import Resource
from tests.harness.clock import HandClock
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.fake_apiserver.requestlog import RecordedRequest
from tests.harness.waiting import wait_until

NAMESPACE = "kubelet-companion"
SHORT = ElectionTiming(lease_duration=2, renew_deadline=1.5, retry_period=0.2)
STEPPED = ElectionTiming(lease_duration=2, renew_deadline=1.5, retry_period=0.2, jitter=0.0)
"""``SHORT`` without jitter: on the hand clock, each retry period wakes every elector once."""
LONG = ElectionTiming(lease_duration=60, renew_deadline=45, retry_period=0.2)
"""A lease far longer than any wait in these tests: a takeover can only come from a release."""

Candidate = Callable[..., LeaderElector]
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)


@pytest.fixture
def clock() -> HandClock:
    return HandClock()


@pytest.fixture
def candidate(fake_apiserver: FakeApiServer, tmp_path: Path) -> Iterator[Candidate]:
    """Electors for the Lease ``kubelet-companion/descheduler``, each with its own client."""
    fake_apiserver.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    )
    kubeconfig = str(fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    clients: list[AsyncKube] = []

    def make(
        identity: str, timing: ElectionTiming, workers: int = 4, clock: Clock | None = None
    ) -> LeaderElector:
        connection = connect(kubeconfig)
        assert connection is not None
        connection.api_client.set_default_header("X-Elector", identity)  # told apart in the log
        kube = AsyncKube(KubeApi(connection.api_client, request_timeout=10.0), workers=workers)
        clients.append(kube)
        lease_api = KubeLeaseApi(kube, NAMESPACE, "descheduler")
        return LeaderElector(
            lease_api, clock=clock or SystemClock(), identity=identity, timing=timing
        )

    yield make
    for kube in clients:
        kube.close()
        kube.api.close()


@asynccontextmanager
async def campaigning(*electors: LeaderElector) -> AsyncIterator[dict[str, asyncio.Task[None]]]:
    tasks = {one.identity: asyncio.create_task(one.run()) for one in electors}
    try:
        yield tasks
    finally:
        for one in electors:
            one.stop()
        await asyncio.wait_for(asyncio.gather(*tasks.values(), return_exceptions=True), 30)


def lease_writes(server: FakeApiServer, holder: str) -> list[RecordedRequest]:
    """The successful creates and PUTs of the Lease that named ``holder``."""
    return [
        request
        for request in server.requests(path_contains="/leases")
        if request.method in ("PUT", "POST")
        and request.status in (200, 201)
        and isinstance(request.body, dict)
        and (request.body.get("spec") or {}).get("holderIdentity") == holder
    ]


def lease_calls(server: FakeApiServer, identity: str) -> int:
    """How many requests for the Lease the elector ``identity`` has had answered."""
    return sum(
        1
        for request in server.requests(path_contains="/leases")
        if request.header("X-Elector") == identity and request.status is not None
    )


async def step(
    clock: HandClock,
    server: FakeApiServer,
    *identities: str,
    seconds: float = STEPPED.retry_period * 1.001,  # a hair past it: float sums never fall short
) -> None:
    """Move the hand clock by ``seconds``, then wait until each elector of ``identities``
    has had a Lease request answered: its step is done, and it sleeps before the next.

    The server logs an answer a moment before the elector has read it and armed its next
    sleep; a move in that moment starts that sleep after it, so the elector waits for the
    next move. Then the clock is moved again (the elector was due): more time passes, never
    less, which no assertion here is hurt by."""
    before = {one: lease_calls(server, one) for one in identities}
    for _ in range(20):
        clock.advance(seconds)
        try:
            for one in identities:
                await wait_until(
                    lambda one=one: lease_calls(server, one) > before[one], f"{one}", timeout=1.0
                )
        except AssertionError:
            continue
        return
    raise AssertionError(f"{identities} made no request in 20 moves of the clock")


async def until(
    condition: Callable[[], object],
    clock: HandClock,
    server: FakeApiServer,
    *identities: str,
) -> None:
    """Step the hand clock (``step``) until ``condition()`` holds."""
    for _ in range(1000):
        if condition():
            return
        await step(clock, server, *identities)
    raise AssertionError("1000 retry periods went by")


def holder(server: FakeApiServer) -> str:
    lease = server.try_get("leases", "descheduler", NAMESPACE)
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


async def test_of_two_candidates_only_one_leads(
    fake_apiserver: FakeApiServer, candidate: Candidate, clock: HandClock
) -> None:
    """Two electors on one API server: one leads and renews, the other follows it, for a
    lease and a half of renews."""
    started: list[str] = []
    first, second = candidate("a", STEPPED, clock=clock), candidate("b", STEPPED, clock=clock)
    for one in (first, second):
        one.on_started_leading = lambda who=one.identity: started.append(who)
    async with campaigning(first, second):
        await wait_until(lambda: first.leading.is_set() or second.leading.is_set(), "a leader")
        leader, follower = (first, second) if first.leading.is_set() else (second, first)
        await until(
            lambda: follower.observed_holder == leader.identity, clock, fake_apiserver, "a", "b"
        )
        renews = len(lease_writes(fake_apiserver, leader.identity))
        for _ in range(15):  # 15 retry periods: well past a whole lease
            await step(clock, fake_apiserver, "a", "b")
        await wait_until(
            lambda: len(lease_writes(fake_apiserver, leader.identity)) >= renews + 15,
            "fifteen more renews",
        )
        assert started == [leader.identity]
        assert leader.is_leader
        assert holder(fake_apiserver) == leader.identity


async def test_a_killed_leader_is_replaced_once_its_lease_lapses(
    fake_apiserver: FakeApiServer, candidate: Candidate, clock: HandClock
) -> None:
    """Cancelling the leader (a crash: no release) lets the follower in, and not before the
    lease duration has passed, on the follower's clock, since it last saw the record
    change."""
    leader, follower = candidate("a", STEPPED, clock=clock), candidate("b", STEPPED, clock=clock)
    async with campaigning(leader) as tasks:
        await wait_until(leader.leading.is_set, "a leads")
        async with campaigning(follower):
            await wait_until(lambda: follower.observed_holder == "a", "b follows a")
            tasks["a"].cancel()
            await asyncio.gather(tasks["a"], return_exceptions=True)
            last_change = clock.monotonic()  # the record cannot change any more
            await until(follower.leading.is_set, clock, fake_apiserver, "b")
            assert clock.monotonic() - last_change >= STEPPED.lease_duration
            lease = fake_apiserver.get("leases", "descheduler", NAMESPACE)
            assert lease["spec"]["holderIdentity"] == "b"
            assert lease["spec"]["leaseTransitions"] == 1


async def test_a_clean_stop_hands_over_at_once_with_the_memory(
    fake_apiserver: FakeApiServer, candidate: Candidate
) -> None:
    """stop() releases the Lease: the follower leads long before the 60 s lease could lapse,
    and loads the churn-guard memory the old leader saved."""
    leader, follower = candidate("a", LONG), candidate("b", LONG)
    async with campaigning(leader) as tasks:
        await wait_until(leader.leading.is_set, "a leads")
        clock = SystemClock()
        await RecentEvictionsMemory(leader, clock=clock, max_age=600).save({"rs-uid": clock.now()})
        async with campaigning(follower):
            await wait_until(lambda: follower.observed_holder == "a", "b follows a")
            leader.stop()
            await tasks["a"]
            await wait_until(follower.leading.is_set, "b takes over after the release")
            loaded = await RecentEvictionsMemory(follower, clock=clock, max_age=600).load()
            assert list(loaded) == ["rs-uid"]
            assert holder(fake_apiserver) == "b"


async def test_a_409_on_a_racing_takeover_is_lost_gracefully(
    fake_apiserver: FakeApiServer, candidate: Candidate
) -> None:
    """Two candidates read the same released Lease and both PUT: the second PUT is 409, its
    elector stays a follower, keeps running, and sees the winner."""
    fake_apiserver.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "descheduler", "namespace": NAMESPACE},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 3},
        }
    )
    # Both reads are answered at once; both writes are held back until both have arrived,
    # so both carry the same resourceVersion and the server serves one first.
    held = fake_apiserver.faults.hang("PUT", r"/leases/descheduler$", seconds=30.0, times=2)
    first, second = candidate("a", LONG), candidate("b", LONG)
    async with campaigning(first, second) as tasks:
        await wait_until(lambda: len(fake_apiserver.requests(method="PUT")) >= 2, "both PUTs")
        fake_apiserver.faults.release(held)
        await wait_until(lambda: first.leading.is_set() or second.leading.is_set(), "a winner")
        conflicts = await wait_until(
            lambda: [r for r in fake_apiserver.requests(method="PUT") if r.status == 409],
            "the losing PUT",
        )
        winner, loser = (first, second) if first.leading.is_set() else (second, first)
        assert conflicts[0].body["spec"]["holderIdentity"] == loser.identity
        await wait_until(lambda: loser.observed_holder == winner.identity, "loser sees winner")
        assert not loser.leading.is_set()
        assert not tasks[loser.identity].done()
        spec = fake_apiserver.get("leases", "descheduler", NAMESPACE)["spec"]
        assert spec["holderIdentity"] == winner.identity
        assert spec["leaseTransitions"] == 4


async def test_a_stalled_leader_is_no_leader_when_the_follower_takes_over(
    fake_apiserver: FakeApiServer, candidate: Candidate, clock: HandClock
) -> None:
    """The leader's only API thread is stuck in a hung request, so its renews cannot go out:
    it stops counting as leader at its renew deadline, before the follower takes over, so
    the two never lead at once."""
    leader = candidate("a", STEPPED, workers=1, clock=clock)
    follower = candidate("b", STEPPED, clock=clock)
    leader_at_takeover: list[bool] = []
    follower.on_started_leading = lambda: leader_at_takeover.append(leader.is_leader)
    async with campaigning(leader):
        await wait_until(leader.leading.is_set, "a leads")
        async with campaigning(follower):
            await wait_until(lambda: follower.observed_holder == "a", "b follows a")
            hung = fake_apiserver.faults.hang("GET", r"/configmaps/stall$", seconds=30.0)
            lease_api = leader.lease_api
            assert isinstance(lease_api, KubeLeaseApi)
            stall = asyncio.create_task(lease_api.kube.get(CONFIG_MAPS, "stall", "default"))
            await wait_until(
                lambda: fake_apiserver.requests(method="GET", path_contains="/stall"), "stuck"
            )
            await until(follower.leading.is_set, clock, fake_apiserver, "b")
            assert leader_at_takeover == [False]
            await wait_until(leader.not_leading.is_set, "a has stepped down")
            fake_apiserver.faults.release(hung)
            with pytest.raises(NotFound):
                await stall
            await until(lambda: leader.observed_holder == "b", clock, fake_apiserver, "b")
            assert not leader.leading.is_set()
