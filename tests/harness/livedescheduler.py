"""The live descheduler as the tests run it: the product's own wiring (``run_descheduler``),
on the product's default options except where a test in one process needs its own: metrics
on a free loopback port, no client rate limit; plus what the test says.

One place builds the options and runs the process, so a test states only what it is about
(``run_live(policy, kube_api, descheduling_interval=60, stop=stop)``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any, TextIO

from prometheus_client import CollectorRegistry

from agent.clock import Clock, SystemClock
from agent.config.schema import Duration, HostPort
from agent.descheduler.cache.state import UsageSource
from agent.descheduler.core.policy import DeschedulerPolicy
from agent.descheduler.live.app import Seams, run_descheduler
from agent.descheduler.options import DeschedulerOptions
from agent.descheduler.policyfile import load_policy
from agent.kube.api import KubeApi

TEST_OPTIONS = DeschedulerOptions(
    metrics_bind_address=HostPort("127.0.0.1:0"), client_connection_qps=0.0
)
"""Metrics on a free port (tests run in parallel), and no client rate limit (0)."""
FAST_LEASE: dict[str, Any] = {
    "lease_duration": Duration(2.0),
    "renew_deadline": Duration(1.5),
    "retry_period": Duration(0.3),
}
"""Lease timings a test of leader election waits out in seconds, not minutes."""


def live_options(**changes: Any) -> DeschedulerOptions:
    """``TEST_OPTIONS`` with ``changes`` (``DeschedulerOptions`` fields) over them."""
    return dataclasses.replace(TEST_OPTIONS, **changes)


async def run_live(
    policy: DeschedulerPolicy | Path,
    api: KubeApi,
    *,
    stop: asyncio.Event | None = None,
    clock: Clock | None = None,
    out: TextIO | None = None,
    usage: UsageSource | None = None,
    registry: CollectorRegistry | None = None,
    identity: str | None = None,
    election_jitter: float | None = None,
    **options: Any,
) -> int:
    """Run the descheduler on ``policy`` (or the policy file at that path) until its
    one-shot cycle is done or ``stop`` is set; return its exit code. ``options`` are
    ``DeschedulerOptions`` fields over ``TEST_OPTIONS``; the rest are its seams. No signal
    handlers: the test's event loop is the test's."""
    seams = Seams(
        clock=clock or SystemClock(),
        out=out,
        usage=usage,
        registry=registry,
        identity=identity,
        election_jitter=election_jitter,
    )
    loaded = load_policy(policy) if isinstance(policy, Path) else policy
    return await run_descheduler(
        loaded, live_options(**options), api, seams, stop=stop, install_signal_handlers=False
    )
