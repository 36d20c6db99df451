"""The benchmark's one list + watch loop over a collection (every pod of the cluster).

Both the kubelet stand-in (``nodes``) and the benchmark's eyes (``tracker``) follow every
pod, and a watch is easy to get subtly wrong: so there is one loop. It lists (pages of 500),
hands the whole list over at once (the consumer drops what is gone), then watches from the
list's resourceVersion and hands over each event as its line arrives. A watch the server
ends at its timeout is resumed from the last version seen at once; bookmarks only move that
version on. A 410 Gone (as an ERROR event or as the answer) means the version is too old:
list again, after a pause, as after any other break (a dropped connection, an ERROR event
of another code), which resumes from the last version seen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from scripts.benchmarks.livecluster.api import ApiError

GONE = 410


class Source(Protocol):
    """What the loop needs of a client (``api.Api`` is one)."""

    def list_all(self, path: str) -> tuple[list[dict[str, Any]], str]: ...

    def watch(
        self, path: str, resource_version: str, seconds: int = 240
    ) -> Iterator[dict[str, Any]]: ...


class ListWatch:
    """``run`` follows ``path`` until ``stop`` is set.

    ``on_list(items)`` gets every list (the first and each relist), ``on_event(kind, obj)``
    each ADDED, MODIFIED or DELETED object; both run on the loop's thread, one at a time.
    ``on_break(error)`` hears why a watch broke (for a log line).
    """

    def __init__(
        self,
        source: Source,
        path: str,
        *,
        on_list: Callable[[list[dict[str, Any]]], None],
        on_event: Callable[[str, dict[str, Any]], None],
        stop: threading.Event,
        on_break: Callable[[BaseException], None] = lambda _error: None,
        watch_seconds: int = 240,
        pause: float = 1.0,
    ) -> None:
        self.source = source
        self.path = path
        self.on_list = on_list
        self.on_event = on_event
        self.stop = stop
        self.on_break = on_break
        self.watch_seconds = watch_seconds
        self.pause = pause
        self.lists = 0
        """How many lists were made (the first one included)."""

    def run(self) -> None:
        version = ""
        while not self.stop.is_set():
            try:
                if not version:
                    items, version = self.source.list_all(self.path)
                    self.lists += 1
                    self.on_list(items)
                version = self._watch(version)
            except Exception as error:  # noqa: BLE001 - the watch is re-established, always
                if self.stop.is_set():
                    return
                if isinstance(error, ApiError) and error.status == GONE:
                    version = ""
                self.on_break(error)
                # Interruptible: a stop during the pause ends the loop at once.
                self.stop.wait(self.pause)

    def _watch(self, version: str) -> str:
        """Events from ``version`` until the watch ends; the version to go on from."""
        for event in self.source.watch(self.path, version, seconds=self.watch_seconds):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":  # a Status: 410 (too old: list again) or a server error
                raise ApiError("WATCH", self.path, int(obj.get("code") or 500), obj)
            version = obj["metadata"]["resourceVersion"]
            if kind != "BOOKMARK":
                self.on_event(str(kind), obj)
            if self.stop.is_set():
                break
        return version
