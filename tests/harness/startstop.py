"""``with part:`` for every harness part that has ``start()`` and ``stop()``: the block starts
the part and stops it however the block ends, spelled once here rather than in each part."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class StartsAndStops:
    """A base for harness parts: ``__enter__`` is ``start()`` (its result is what ``as``
    binds), ``__exit__`` is ``stop()``."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
