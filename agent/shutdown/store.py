"""Loading and saving the shutdown record, off the event loop.

Saves are coalesced: while one write is in flight, later records queue as "the latest
one", and only that is written next. A phase transition never waits behind a backlog of
stale snapshots, and every ``save`` returns once a record at least as new is on disk.
A failed write (read-only or full disk) is logged and does not stop the shutdown: the
pods must still be terminated and the lock released on time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog

from agent.node.statefile import StateFileUnreadable, quarantine, read_json, write_json_atomic
from agent.shutdown.record import ShutdownRecord, StateFileError

_log = structlog.get_logger(subsystem="shutdown.store")


class RecordStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._latest: ShutdownRecord | None = None
        self._writing = asyncio.Lock()
        self._background: set[asyncio.Task[bool]] = set()

    def load(self) -> ShutdownRecord | None:
        """The stored record, or ``None``. A file we cannot use is moved aside, never lost."""
        try:
            document = read_json(self.path)
            return None if document is None else ShutdownRecord.from_json(document)
        except (StateFileUnreadable, StateFileError) as error:
            kept = self._quarantine()
            _log.error("shutdown state file unusable; moved aside", error=str(error), kept=kept)
            return None
        except OSError as error:
            _log.error("cannot read the shutdown state file", path=str(self.path), error=str(error))
            return None

    def _quarantine(self) -> str:
        try:
            return str(quarantine(self.path))
        except OSError as error:
            return f"(could not move it: {error})"

    async def save(self, record: ShutdownRecord) -> bool:
        """Write ``record`` (or a newer one saved meanwhile); ``False`` if the write failed."""
        self._latest = record  # set now, not when a task runs, so call order decides "latest"
        return await self._write_latest()

    async def _write_latest(self) -> bool:
        async with self._writing:
            latest = self._take_latest()
            if latest is None:
                return True  # a newer record was written while we waited
            try:
                await asyncio.to_thread(write_json_atomic, self.path, latest.to_json())
            except OSError as error:
                _log.error("cannot write the state file", path=str(self.path), error=str(error))
                return False
            return True

    def _take_latest(self) -> ShutdownRecord | None:
        latest, self._latest = self._latest, None
        return latest

    def save_soon(self, record: ShutdownRecord) -> asyncio.Task[bool]:
        """Save without waiting (used on the hot path between pod deletions).

        The returned task may be waited for with a bound, never cancelled: it holds the
        write lock until its thread is done, which is what keeps an older record from
        landing after a newer one.
        """
        self._latest = record
        task = asyncio.get_running_loop().create_task(self._write_latest())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def flush(self) -> None:
        """Wait for saves started with ``save_soon``."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
