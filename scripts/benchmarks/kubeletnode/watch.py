"""The benchmark's eyes on the API server: every pod event and every event of our Node.

Each runs in a thread of its own: list, then watch from the list's resourceVersion, each
event recorded (``figures.PodSeen``/``NodeSeen``) with the moment its line arrived; a watch
that ends is resumed from the last revision seen, one that is too old (410) relists. The
records only grow; ``figures`` reads them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import urllib3

from scripts.benchmarks.kubeletnode.figures import NodeSeen, PodSeen, node_seen, pod_seen
from scripts.benchmarks.livecluster.api import Api, ApiError

T = TypeVar("T")
WATCH_SECONDS = 120


class Recorder(threading.Thread, Generic[T]):
    def __init__(
        self,
        api: Api,
        path: str,
        reduce: Callable[[float, str, dict[str, Any]], T],
    ) -> None:
        super().__init__(name=f"watch {path}", daemon=True)
        self.api = api
        self.path = path
        self.reduce = reduce
        self.lock = threading.Lock()
        self.seen: list[T] = []
        self.synced = threading.Event()
        self.stopping = threading.Event()
        self.problems: list[str] = []

    def records(self) -> list[T]:
        with self.lock:
            return list(self.seen)

    def revision(self) -> int:
        """The store's revision now (a list of one item: its resourceVersion)."""
        listed = self.api.ok("GET", self.path + "?limit=1")
        return int(listed["metadata"]["resourceVersion"])

    def _add(self, kind: str, obj: dict[str, Any]) -> None:
        record = self.reduce(time.monotonic(), kind, obj)
        with self.lock:
            self.seen.append(record)

    def run(self) -> None:
        revision = ""
        while not self.stopping.is_set():
            try:
                revision = self._follow(revision or self._list())
            except (ApiError, OSError, ValueError, urllib3.exceptions.HTTPError) as error:
                if not self.stopping.is_set():  # the API server going away at the end
                    self.problems.append(str(error)[:200])
                time.sleep(0.5)

    def _list(self) -> str:
        listed = self.api.ok("GET", self.path)
        for item in listed.get("items") or []:
            self._add("LISTED", item)
        self.synced.set()
        return str(listed["metadata"]["resourceVersion"])

    def _follow(self, revision: str) -> str:
        for event in self.api.watch(self.path, revision, WATCH_SECONDS):
            if self.stopping.is_set():
                break
            obj = event.get("object") or {}
            kind = event.get("type")
            if kind == "ERROR":
                return "" if obj.get("code") == 410 else revision
            revision = (obj.get("metadata") or {}).get("resourceVersion") or revision
            if kind != "BOOKMARK":
                self._add(str(kind), obj)
        return revision


def pods(api: Api) -> Recorder[PodSeen]:
    """Every pod of the cluster (a replacement is bound to no node when it is made)."""
    return Recorder(api, "/api/v1/pods", pod_seen)


def nodes(api: Api) -> Recorder[NodeSeen]:
    """The Nodes (one: the real node)."""
    return Recorder(api, "/api/v1/nodes", lambda at, _kind, obj: node_seen(at, obj))
