"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Why: the central descheduler runs as two or more replicas, and only one may evict. The
Python client has no elector, and ours must run on the injected clock so a unit test can
drive leases of minutes in no time.

The rules (client-go ``leaderelection`` with a ``LeaseLock``):

- The record is ``spec.holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``,
  ``renewTime`` and ``leaseTransitions``.
- A candidate takes the Lease when it is absent, when its holder is empty (a clean
  release), when the holder is us, or when the record has not changed for the holder's
  ``leaseDurationSeconds`` *as measured on our own monotonic clock since we first saw that
  record*. The holder's ``renewTime`` was written by another host's wall clock, so it is
  never compared with ours: only "it stopped changing" counts.
- Every write is a PUT carrying the resourceVersion we read, so of two candidates that saw
  the same expired record exactly one wins; the other gets 409 and stays a follower.
- The leader renews every ``retry_period``. When no renew has succeeded for
  ``renew_deadline`` since the last good one started, it steps down, which is before any
  follower can take over (``renew_deadline < lease_duration``, and a follower starts
  counting only once it has *seen* our last renew). ``is_leader`` is computed from the clock
  too, so a caller that checks it never acts past the deadline even while the renewing
  task is stuck in a hung request.
- ``stop()`` steps down first, then clears ``holderIdentity`` (a guarded PUT), so a
  follower takes over at its next try instead of waiting for the lease to lapse.

Where the parts live: the calls on the Lease and its record's wire form are
``agent.kube.lease`` (the seam tests replace); the leader's own annotations on the Lease are
``agent.kube.leaseannotations``, beside the churn guard's memory, their one user: this
module offers them only the guarded write (``renew_with``) and the fresh read
(``refresh``). Time is ``agent.clock``'s ``Clock``, the same one the runtime and every
controller take: it lives in the plumbing so that this adapter may import it. Retries are
the shared ``retry_async``, and the races against a deadline or a stop are ``agent.clock``'s.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import math
import random
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import structlog

from agent.clock import Clock, sleep_or_done, sleep_or_set
from agent.kube.backoff import Backoff, retry_async
from agent.kube.errors import Conflict, KubeError, LeadershipLost, NotFound
from agent.kube.jsontypes import JsonObject
from agent.kube.lease import LeaderRecord, LeaseApi, lease_object
from agent.kubesemantics.timestamps import rfc3339

T = TypeVar("T")
_log = structlog.get_logger(subsystem="kube.leaderelection")


@dataclass(frozen=True)
class ElectionTiming:
    """How long a lease lasts, how long a leader may go without renewing it, how often a
    candidate tries (the descheduler's options hold its defaults, upstream's)."""

    lease_duration: float
    renew_deadline: float
    retry_period: float
    jitter: float = 0.2
    """A candidate waits ``retry_period * (1 + jitter * random())`` between tries, so
    followers that start together do not hit the API server in step."""

    def __post_init__(self) -> None:
        # client-go's own checks: a leader must give up before a follower may take over.
        if not self.lease_duration > self.renew_deadline > 0:
            raise ValueError("lease_duration must be greater than renew_deadline, both > 0")
        if not 0 < self.retry_period < self.renew_deadline:
            raise ValueError("retry_period must be > 0 and less than renew_deadline")
        if self.jitter < 0:
            raise ValueError("jitter must be >= 0")


def default_identity() -> str:
    """Hostname plus a random suffix: two processes on one host (or a restarted pod that
    kept its name) are still two candidates."""
    return f"{socket.gethostname()}_{secrets.token_hex(4)}"


class _Expired(Exception):
    """The deadline passed (or a stop was asked for) before the awaited call finished."""


class LeaderElector:
    """Campaigns for one Lease until ``stop()``; ``leading`` is set while we lead.

    Callers that act as leader either wait on ``leading`` and watch ``not_leading``, or
    pass callbacks; before every leader-only action they call ``check()`` (or read
    ``is_leader``), which fails once the renew deadline has passed without a good renew.
    """

    def __init__(
        self,
        lease_api: LeaseApi,
        *,
        clock: Clock,
        identity: str | None = None,
        timing: ElectionTiming,
        backoff: Backoff = Backoff(initial=0.5, cap=5.0),
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> None:
        self.lease_api = lease_api
        self.clock = clock
        self.identity = identity or default_identity()
        self.timing = timing
        self.backoff = backoff
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.leading = asyncio.Event()
        self.not_leading = asyncio.Event()
        self.not_leading.set()
        self._stopping = asyncio.Event()
        # Concurrency: one loop; renews and ``renew_with`` (the annotation writes) both PUT
        # the Lease, so they take this lock to keep our own writes from 409-ing each other.
        self._write_lock = asyncio.Lock()
        self._lease: JsonObject | None = None  # the last Lease object we read or wrote
        self._observed: LeaderRecord | None = None
        self._observed_at = 0.0  # our monotonic time when ``_observed`` last changed
        self._renewed_at = float("-inf")  # start of our last successful write
        # The record holds whole seconds; rounding up only makes followers wait longer.
        self._lease_seconds = math.ceil(timing.lease_duration)

    # -- what callers read ------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True only while leading *and* within the renew deadline of the last good renew."""
        return (
            self.leading.is_set()
            and self.clock.monotonic() < self._renewed_at + self.timing.renew_deadline
        )

    def check(self) -> None:
        """Raise ``LeadershipLost`` unless ``is_leader``; call it before a leader-only act."""
        if not self.is_leader:
            raise LeadershipLost(f"{self.identity} does not hold the leader lease")

    @property
    def observed_holder(self) -> str:
        """The holder in the last record we saw ("" when none or released)."""
        return self._observed.holder_identity if self._observed else ""

    @property
    def lease(self) -> JsonObject | None:
        """The last Lease object we read or wrote (``None`` before the first)."""
        return self._lease

    # -- the campaign -----------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead while renewing, and campaign again after a loss, until ``stop()``.

        Cancelling ``run`` steps down without releasing (the lease then lapses); ``stop()``
        steps down and releases.
        """
        try:
            while not self._stopping.is_set():
                if not await self._acquire():
                    break
                self._start_leading()
                await self._renew_until_lost_or_stopped()
                self._stop_leading()
        finally:
            self._stop_leading()
        await self._release()

    def stop(self) -> None:
        """Ask ``run`` to step down, release the lease and return."""
        self._stopping.set()

    async def _acquire(self) -> bool:
        while not self._stopping.is_set():
            deadline = self.clock.monotonic() + self.timing.renew_deadline
            try:
                if await self._until(self._try_acquire_or_renew(deadline), deadline):
                    return True
            except _Expired:
                pass
            wait = self.timing.retry_period * (1 + self.timing.jitter * random.random())  # noqa: S311 - spreading tries, not crypto
            if await self._sleep_unless_stopped(wait):
                return False
        return False

    async def _renew_until_lost_or_stopped(self) -> None:
        while True:
            if await self._sleep_unless_stopped(self.timing.retry_period):
                return
            deadline = self._renewed_at + self.timing.renew_deadline
            while True:
                try:
                    if await self._until(self._try_acquire_or_renew(deadline), deadline):
                        break
                except _Expired:
                    if not self._stopping.is_set():
                        _log.warning("leader lease not renewed in time", identity=self.identity)
                    return
                if self.observed_holder not in ("", self.identity):
                    _log.warning(
                        "leader lease taken over", identity=self.identity, by=self.observed_holder
                    )
                    return
                wait = min(self.timing.retry_period, deadline - self.clock.monotonic())
                if wait <= 0:
                    _log.warning("leader lease not renewed in time", identity=self.identity)
                    return
                if await self._sleep_unless_stopped(wait):
                    return

    def _start_leading(self) -> None:
        _log.info("became leader", identity=self.identity)
        self.not_leading.clear()
        self.leading.set()
        if self.on_started_leading is not None:
            self.on_started_leading()

    def _stop_leading(self) -> None:
        if not self.leading.is_set():
            return
        _log.info("stopped leading", identity=self.identity)
        self.leading.clear()
        self.not_leading.set()
        if self.on_stopped_leading is not None:
            self.on_stopped_leading()

    # -- one try, client-go's tryAcquireOrRenew -----------------------------------------

    async def _try_acquire_or_renew(self, deadline: float) -> bool:
        """One attempt; True when the Lease now names us with a fresh renewTime."""
        async with self._write_lock:
            try:
                return await self._try_locked(deadline)
            except Conflict:
                return False  # another candidate wrote between our read and our PUT
            except KubeError as error:
                _log.warning("leader lease call failed", identity=self.identity, error=str(error))
                return False

    async def _try_locked(self, deadline: float) -> bool:
        started = self.clock.monotonic()
        if self.leading.is_set() and self._lease is not None:
            # Fast path: renew from our own last write; a 409 means someone else wrote
            # since, and the full path below re-reads and decides.
            try:
                written = await self._call(
                    lambda: self.lease_api.replace(self._claimed(self._lease or {})), deadline
                )
            except (Conflict, NotFound):
                pass
            else:
                self._remember_write(written, started)
                return True
        try:
            current = await self._call(self.lease_api.get, deadline)
        except NotFound:
            created = await self._call(lambda: self.lease_api.create(self._new_lease()), deadline)
            self._remember_write(created, started)
            return True
        record = self._observe(current)
        held_by_other = record.holder_identity not in ("", self.identity)
        if (
            held_by_other
            and self._observed_at + record.lease_duration_seconds > self.clock.monotonic()
        ):
            return False
        written = await self._call(lambda: self.lease_api.replace(self._claimed(current)), deadline)
        self._remember_write(written, started)
        if held_by_other:
            _log.info("took over an expired lease", identity=self.identity, previous=record)
        return True

    def _observe(self, lease: JsonObject) -> LeaderRecord:
        self._lease = lease
        record = LeaderRecord.of(lease)
        if record != self._observed:
            self._observed = record
            # Taken after the read returned: the later we start counting, the safer.
            self._observed_at = self.clock.monotonic()
        return record

    def _remember_write(self, lease: JsonObject, started: float) -> None:
        self._observe(lease)
        # Our lease is valid from when the write *started*, not when it was answered.
        self._renewed_at = started

    def _claimed(self, lease: JsonObject) -> JsonObject:
        """``lease`` with our record; keeps metadata (resourceVersion, annotations)."""
        old = LeaderRecord.of(lease)
        now = rfc3339(self.clock.now(), micros=True)
        ours = old.holder_identity == self.identity
        record = LeaderRecord(
            holder_identity=self.identity,
            lease_duration_seconds=self._lease_seconds,
            acquire_time=old.acquire_time if ours else now,
            renew_time=now,
            lease_transitions=old.lease_transitions if ours else old.lease_transitions + 1,
        )
        claimed = copy.deepcopy(lease)
        claimed["spec"] = {**(lease.get("spec") or {}), **record.as_spec()}
        return claimed

    def _new_lease(self) -> JsonObject:
        now = rfc3339(self.clock.now(), micros=True)
        record = LeaderRecord(self.identity, self._lease_seconds, now, now, 0)
        return lease_object(self.lease_api.name, record.as_spec())

    # -- release ------------------------------------------------------------------------

    async def _release(self) -> None:
        """Clear holderIdentity if we still hold the Lease (client-go ReleaseOnCancel)."""
        if self._lease is None or self.observed_holder != self.identity:
            return
        async with self._write_lock:
            lease = copy.deepcopy(self._lease)
            now = rfc3339(self.clock.now(), micros=True)
            lease["spec"] = {
                **(lease.get("spec") or {}),
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
            }
            deadline = self.clock.monotonic() + self.timing.retry_period
            try:
                self._observe(await self._call(lambda: self.lease_api.replace(lease), deadline))
            except KubeError as error:
                # 409: someone took it over already; anything else: it will lapse.
                _log.info("leader lease not released", identity=self.identity, error=str(error))
            else:
                _log.info("released the leader lease", identity=self.identity)

    # -- writes a leader makes beside its renews ------------------------------------------

    async def refresh(self) -> JsonObject | None:
        """Read the Lease afresh (``None`` when it does not exist) and remember it."""
        deadline = self.clock.monotonic() + self.timing.renew_deadline
        async with self._write_lock:
            try:
                lease = await self._call(self.lease_api.get, deadline)
            except NotFound:
                return None
            self._observe(lease)
            return lease

    async def renew_with(self, change: Callable[[JsonObject], None]) -> None:
        """Renew the Lease, as leader, with ``change`` made to it first (its annotations,
        say), guarded by resourceVersion: the write carries a fresh renewTime too.

        On 409 we re-read: if we are still the holder we write again, otherwise
        ``LeadershipLost``; so a deposed leader never overwrites its successor's Lease.
        """
        async with self._write_lock:
            for _attempt in range(3):
                self.check()
                if self._lease is None:
                    raise LeadershipLost(f"{self.identity} has not read the lease")
                deadline = self._renewed_at + self.timing.renew_deadline
                lease = self._claimed(self._lease)
                change(lease)
                started = self.clock.monotonic()
                try:
                    written = await self._call(
                        functools.partial(self.lease_api.replace, lease), deadline
                    )
                except Conflict:
                    self._observe(await self._call(self.lease_api.get, deadline))
                    if self.observed_holder != self.identity:
                        raise LeadershipLost(
                            f"{self.identity} lost the lease to {self.observed_holder!r}"
                        ) from None
                    continue
                self._remember_write(written, started)
                return
        raise LeadershipLost(f"{self.identity}: the lease kept changing under us")

    # -- timing plumbing --------------------------------------------------------------

    async def _call(self, operation: Callable[[], Awaitable[T]], deadline: float) -> T:
        """``operation`` with retries on 429/5xx/timeouts, never sleeping past ``deadline``:
        the shared retry, on our clock, with no attempt cap (the deadline is the bound)."""
        return await retry_async(
            operation,
            backoff=self.backoff,
            attempts=None,
            deadline=deadline,
            monotonic=self.clock.monotonic,
            sleep=self.clock.sleep,
        )

    async def _until(self, work: Awaitable[T], deadline: float) -> T:
        """``work``'s result, or ``_Expired`` when ``deadline`` (monotonic) or a stop comes
        first. A hung request is abandoned, not awaited: its thread finishes on its own,
        and anything it wrote was guarded by resourceVersion."""
        task = asyncio.ensure_future(work)
        try:
            # The task is ours: the race only watches it (the timer and the stop waiter are
            # the race's own), and we cancel it here however the race ends, ours included.
            await sleep_or_done(
                self.clock, deadline - self.clock.monotonic(), task, self._stopping.wait()
            )
            if task.done():
                return task.result()
            raise _Expired
        finally:
            task.cancel()

    async def _sleep_unless_stopped(self, seconds: float) -> bool:
        """Sleep on the clock; True when ``stop()`` came first."""
        return await sleep_or_set(self.clock, seconds, self._stopping)
