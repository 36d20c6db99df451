"""Every pod of the cluster, followed with list + watch, and every deletion and creation timed.

The benchmark's eyes: utilization is computed from the pods it holds (requests on the nodes
they are bound to), and once ``record`` is called each pod deletion (the first sight of a
deletionTimestamp, or the DELETED event) and each new pod is kept with the seconds since that
moment, its node and its controller. The node a pod was first bound to is kept for every
pod, even one deleted since: that is where a replacement landed. For the rollout budget
(``rolloutbudget``) each eviction (the API server's ``DisruptionTarget`` condition) and
each pod's first Ready are kept as events, with their Deployment, as the watch delivers
them.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from scripts.benchmarks.livecluster.api import Api
from scripts.benchmarks.livecluster.measures import (
    Creation,
    Deletion,
    PodState,
    controller_of,
    deployment_of,
    is_evicted,
    is_ready,
    pod_cpu_milli,
)
from scripts.benchmarks.livecluster.podwatch import ListWatch
from scripts.benchmarks.livecluster.rolloutbudget import EVICTED, READY, RolloutEvent


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
        self.rollout: list[RolloutEvent] = []
        """Evictions and first-time Ready pods, as the watch showed them (once recording)."""
        self.evicted: set[str] = set()
        self.ready: set[str] = set()
        self.plain_deletions = 0
        """Pods deleted (once recording) without the eviction API's condition."""
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
            self._rollout(uid, pod, now)
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

    def _rollout(self, uid: str, pod: dict[str, Any], now: float) -> None:
        """An eviction or a first Ready seen now (lock held)."""
        for seen, happened, kind in (
            (self.evicted, is_evicted(pod), EVICTED),
            (self.ready, is_ready(pod), READY),
        ):
            if happened and uid not in seen:
                seen.add(uid)
                if self.origin is not None:
                    self.rollout.append(
                        RolloutEvent(now - self.origin, kind, deployment_of(pod), self.names[uid])
                    )

    def _deleted(self, uid: str, state: PodState, now: float) -> None:
        if uid in self.deleted:
            return
        self.deleted.add(uid)
        if self.origin is not None:
            self.plain_deletions += uid not in self.evicted
            self.deletions.append(
                Deletion(now - self.origin, self.names[uid], uid, state.node, self.owners[uid])
            )

    def _listed(self, items: list[dict[str, Any]]) -> None:
        seen = {p["metadata"]["uid"] for p in items}
        for pod in items:
            self._observe("ADDED", pod)
        now = time.monotonic()
        with self.lock:
            for uid in [u for u in self.pods if u not in seen]:
                self._deleted(uid, self.pods.pop(uid), now)
        self.synced.set()

    def run(self) -> None:
        ListWatch(
            self.api,
            "/api/v1/pods",
            on_list=self._listed,
            on_event=self._observe,
            stop=self.stop,
            on_break=lambda error: print(
                f"pod watch broke: {error!r}", file=sys.stderr, flush=True
            ),
            watch_seconds=120,
        ).run()

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

    def rollout_events(self) -> tuple[list[RolloutEvent], int]:
        """The evictions and Ready pods seen since ``record``, and the deletions that were
        not evictions."""
        with self.lock:
            return list(self.rollout), self.plain_deletions
