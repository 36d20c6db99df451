"""The reflector's reconnect policy, driven by a transport double (no server needed)."""

import asyncio
from typing import Any

from agent.kube.reflector import Reflector
from agent.kube.resources import PODS


class _EmptyStream:
    def __iter__(self) -> Any:
        return iter(())

    def close(self) -> None:
        """Nothing to release."""


class _InstantlyEndingWatches:
    """A server that answers every watch with an immediately finished, empty stream."""

    def __init__(self) -> None:
        self.watches = 0

    def list(self, *_: Any, **__: Any) -> dict[str, Any]:
        return {"items": [], "metadata": {"resourceVersion": "1"}}

    def watch(self, *_: Any, **__: Any) -> _EmptyStream:
        self.watches += 1
        return _EmptyStream()


async def test_empty_watches_that_end_at_once_are_backed_off() -> None:
    """A watch ending within a second with no events counts as a failure: no reconnect storm."""
    transport = _InstantlyEndingWatches()
    reflector = Reflector(transport, PODS, name="pods")  # type: ignore[arg-type]
    task = asyncio.create_task(reflector.run())
    await asyncio.sleep(0.5)
    reflector.stop()
    await asyncio.wait_for(task, 5)
    assert reflector.synced.is_set()
    assert 1 <= transport.watches <= 5
