"""Making logind wait long enough: raise ``InhibitDelayMaxSec`` to the budget, or say why not.

logind caps every delay lock at ``InhibitDelayMaxSec``; below the budget, the node powers
off mid-shutdown. Like kubelet, we write a drop-in, reload logind through systemd and read
the value back with backoff (100 ms, x2, 5 steps), because the reload is asynchronous
(kubernetes#133133). Unlike kubelet, failure does not stop the agent: a short delay is
better than none, so the caller still takes the lock and reports itself degraded.

The budget arrives in whole seconds (the phase plan's sum) and is compared with logind's
delay as it is; the drop-in asks for the budget plus the margin, rounded up to whole
seconds by ``dropin.dropin_seconds``, the one rounding on the way to logind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agent.logind.dropin import write_dropin
from agent.logind.errors import LogindError
from agent.logind.manager import USEC_PER_SECOND, LogindManager
from agent.logind.systemd import reload_logind
from agent.retrying import Backoff, RetryPolicy

REREAD = RetryPolicy(Backoff(initial=0.1, factor=2.0, cap=1.6, jitter=0.0), attempts=6)
"""The first read, then 5 re-reads after 100 ms, x2: kubelet's schedule (no jitter)."""


@dataclass(frozen=True)
class DelayOutcome:
    seconds: float
    """logind's InhibitDelayMaxSec as last read."""
    sufficient: bool
    overridden: bool = False
    """We wrote the drop-in and reloaded logind."""
    problem: str | None = None


async def ensure_inhibit_delay(
    manager: LogindManager,
    *,
    budget: int,
    margin: float,
    dropin_path: Path,
    manage: bool,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> DelayOutcome:
    """Read the delay; if it is below ``budget``, override it (when ``manage``) and re-read.

    Raises ``LogindError`` only if the first read fails (logind unreachable).
    """
    seconds = await _delay_seconds(manager)
    if seconds >= budget:
        return DelayOutcome(seconds, sufficient=True)
    if not manage:
        return DelayOutcome(
            seconds,
            sufficient=False,
            problem=f"logind InhibitDelayMaxSec is {seconds:g}s, below the shutdown budget of "
            f"{budget:g}s, and shutdown.manageLogindDelay is false",
        )
    wanted = budget + margin
    try:
        await asyncio.to_thread(write_dropin, dropin_path, wanted)
    except OSError as error:
        return DelayOutcome(
            seconds,
            sufficient=False,
            problem=f"cannot write the logind drop-in {dropin_path}: {error}",
        )
    try:
        await reload_logind(manager.bus, manager.timeout)
    except LogindError as error:
        return DelayOutcome(
            seconds,
            sufficient=False,
            overridden=True,
            problem=f"wrote {dropin_path} but could not reload logind through systemd: {error}",
        )
    failures = 1  # the first read found the delay too short
    while (wait := REREAD.next_wait(failures)) is not None:
        await sleep(wait)
        failures += 1
        try:
            seconds = await _delay_seconds(manager)
        except LogindError:
            continue  # logind may be briefly busy reloading; the next step reads again
        if seconds >= budget:
            return DelayOutcome(seconds, sufficient=True, overridden=True)
    return DelayOutcome(
        seconds,
        sufficient=False,
        overridden=True,
        problem=f"timed out after {failures - 1} attempts waiting for logind "
        f"InhibitDelayMaxSec to update to {wanted:g}s (the budget is {budget:g}s); "
        f"the current value is {seconds:g}s",
    )


async def _delay_seconds(manager: LogindManager) -> float:
    """logind's ``InhibitDelayMaxUSec``, in seconds like the budget."""
    return await manager.inhibit_delay_max_usec() / USEC_PER_SECOND
