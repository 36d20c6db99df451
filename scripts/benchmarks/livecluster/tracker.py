"""Every pod of the cluster, followed with list + watch, and every deletion and creation timed.

The benchmark's eyes: utilization is computed from the pods it holds (requests on the nodes
they are bound to), and once ``record`` is called each pod deletion (the first sight of a
deletionTimestamp, or the DELETED event) and each new pod is kept with the seconds since that
moment, its node and its controller. The node a pod was first bound to is kept for every
pod, even one deleted since: that is where a replacement landed.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from scripts.benchmarks.livecluster.api import Api, ApiError
from scripts.benchmarks.livecluster.measures import (
    Creation,
    Deletion,
    PodState,
    controller_of,
    pod_cpu_milli,
)


class PodTracker:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.lock = threading.Lock()
        self.pods: dict[str, PodState] = {}
        self.names: dict[str, str] = {}
        """uid -> ``namespace/name``."""
        self.owners: dict[str, str | None] = {}
        self.bound: dict[str, str] = {}
        """uid -> the node the pod was first seen bound to (kept after it is gone)."""
        self.deletions: list[Deletion] = []
        self.creations: list[Creation] = []
        self.deleted: set[str] = set()
        self.origin: float | None = None
        self.synced = threading.Event()
        self.stop = threading.Event()

    def record(self) -> float:
        """Start keeping deletions and creations, timed from now; returns now (monotonic)."""
        with self.lock:
            self.origin = time.monotonic()
            return self.origin

    def _observe(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        now = time.monotonic()
        with self.lock:
            if uid not in self.names:
                self.names[uid] = f"{meta['namespace']}/{meta['name']}"
                self.owners[uid] = controller_of(pod)
                if self.origin is not None and kind != "DELETED":
                    self.creations.append(
                        Creation(now - self.origin, self.names[uid], uid, self.owners[uid])
                    )
            node = pod.get("spec", {}).get("nodeName")
            if node and uid not in self.bound:
                self.bound[uid] = node
            state = PodState(
                node=node,
                cpu_milli=pod_cpu_milli(pod),
                phase=pod.get("status", {}).get("phase"),
                deleting=bool(meta.get("deletionTimestamp")),
            )
            if kind == "DELETED":
                self.pods.pop(uid, None)
                self._deleted(uid, state, now)
                return
            self.pods[uid] = state
            if state.deleting:
                self._deleted(uid, state, now)

    def _deleted(self, uid: str, state: PodState, now: float) -> None:
        if uid in self.deleted:
            return
        self.deleted.add(uid)
        if self.origin is not None:
            self.deletions.append(
                Deletion(now - self.origin, self.names[uid], uid, state.node, self.owners[uid])
            )

    def run(self) -> None:
        version = ""
        while not self.stop.is_set():
            try:
                if not version:
                    items, version = self.api.list_all("/api/v1/pods")
                    seen = {p["metadata"]["uid"] for p in items}
                    for pod in items:
                        self._observe("ADDED", pod)
                    now = time.monotonic()
                    with self.lock:
                        for uid in [u for u in self.pods if u not in seen]:
                            self._deleted(uid, self.pods.pop(uid), now)
                    self.synced.set()
                for event in self.api.watch("/api/v1/pods", version, seconds=120):
                    kind, obj = event.get("type"), event.get("object") or {}
                    if kind == "ERROR":
                        version = "" if obj.get("code") == 410 else version
                        break
                    version = obj["metadata"]["resourceVersion"]
                    if kind != "BOOKMARK":
                        self._observe(str(kind), obj)
                    if self.stop.is_set():
                        return
            except Exception as error:  # noqa: BLE001 - the watch is re-established, always
                if self.stop.is_set():
                    return
                if isinstance(error, ApiError) and error.status == 410:
                    version = ""
                print(f"pod watch broke: {error!r}", file=sys.stderr, flush=True)
                time.sleep(1)

    def start(self) -> None:
        threading.Thread(target=self.run, daemon=True, name="pod-tracker").start()
        if not self.synced.wait(60):
            raise RuntimeError("pod tracker: no pod list within 60 s")

    def states(self) -> list[PodState]:
        with self.lock:
            return list(self.pods.values())

    def records(self) -> tuple[list[Deletion], list[Creation], dict[str, str]]:
        with self.lock:
            return list(self.deletions), list(self.creations), dict(self.bound)
