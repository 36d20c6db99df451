"""Waiting in tests for state that other threads (watches, HTTP, D-Bus) change.

There is no event to await for such state, so this polls, and it is bounded: the bound
guards against hangs and is never a speed assertion (those live in ``scripts/bench``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


async def wait_until(
    condition: Callable[[], Any], what: str = "condition", timeout: float = 10.0
) -> Any:
    """Return ``condition()``'s first truthy value; fail the test after ``timeout`` seconds."""
    try:
        async with asyncio.timeout(timeout):
            while not (value := condition()):  # noqa: ASYNC110 - see the module docstring
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}") from None
    return value
