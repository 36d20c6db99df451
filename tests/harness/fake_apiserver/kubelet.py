"""A fake kubelet for one node: finishes graceful pod deletions and reports pod readiness.

Without a kubelet, a bound pod that is deleted gracefully never goes away, so drain and
shutdown logic could not be tested end to end. `FakeKubelet` watches the store in-process (no
HTTP) and, for pods on its node: removes a terminating pod once its grace period (scaled by
`time_scale`) has passed, unless the test marked it stuck; records when each pod disappeared;
and sets pods Running/Ready (or not), optionally as soon as they land on the node.

Simplifications: no containers run; a terminating pod keeps its phase until it is removed (the
real kubelet first reports terminated containers and a terminal phase).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
import uuid
from typing import Any, Self

from ..startstop import StartsAndStops
from ..waiting import wait_notified
from .deletion import DeleteOptions
from .objects import is_deleting, name_of, namespace_of, now, rfc3339
from .resources import ResourceType
from .status import ApiError
from .store import Store, StoredEvent

JSON = dict[str, Any]
PodKey = tuple[str, str]

_log = logging.getLogger(__name__)
_IDLE_WAKEUP_SECONDS = 1.0


def container_id(pod_uid: str, container: str) -> str:
    """A stable `containerd://<64 hex>` id per pod uid and container name."""
    return "containerd://" + hashlib.sha256(f"{pod_uid}/{container}".encode()).hexdigest()


def _with_condition(conditions: list[JSON], kind: str, status: str, stamp: str) -> list[JSON]:
    for condition in conditions:
        if condition.get("type") == kind:
            if condition.get("status") != status:
                condition["status"] = status
                condition["lastTransitionTime"] = stamp
            condition.setdefault("lastProbeTime", None)
            return conditions
    conditions.append(
        {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": stamp}
    )
    return conditions


class FakeKubelet(StartsAndStops):
    """The kubelet of `node_name`, driving pods through the store (see module docstring)."""

    def __init__(
        self,
        store: Store,
        node_name: str,
        *,
        time_scale: float = 1.0,
        max_termination_seconds: float | None = None,
        auto_ready: bool = False,
        register_node: bool = True,
        node_ip: str = "10.0.0.10",
    ) -> None:
        self.store = store
        self.node_name = node_name
        self.time_scale = time_scale
        self.max_termination_seconds = max_termination_seconds
        self.auto_ready = auto_ready
        self.register_node = register_node
        self.node_ip = node_ip
        self._cond = threading.Condition()
        self._stuck: set[PodKey] = set()
        self._deadlines: dict[PodKey, tuple[float, str]] = {}
        self._removed: dict[PodKey, float] = {}
        self._readied: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pod_ips: dict[str, str] = {}

    # --- lifecycle ----------------------------------------------------------------------------

    def _types(self) -> tuple[ResourceType, ResourceType]:
        pods = self.store.registry.lookup("", "v1", "pods")
        nodes = self.store.registry.lookup("", "v1", "nodes")
        if pods is None or nodes is None:  # pragma: no cover - built in
            raise RuntimeError("pods and nodes must be registered")
        return pods, nodes

    def start(self) -> Self:
        """Register the node (if asked) and start following the store."""
        if self._thread is not None:
            return self
        if self.register_node:
            self._register_node()
        with self.store.locked():
            cursor = self.store.resource_version
            pods_rt, _ = self._types()
            for pod in self.store.iter_objects(pods_rt):
                self._observe(pod)
        self._thread = threading.Thread(
            target=self._run, args=(cursor,), name=f"fake-kubelet-{self.node_name}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop following the store (terminating pods then stay until deleted otherwise)."""
        self._stop.set()
        with self.store.cond:
            self.store.cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _register_node(self) -> None:
        _, nodes_rt = self._types()
        if self.store.peek(nodes_rt, "", self.node_name) is not None:
            return
        stamp = rfc3339(now())
        digest = hashlib.sha256(self.node_name.encode()).hexdigest()
        capacity = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
        node: JSON = {
            "metadata": {
                "name": self.node_name,
                "labels": {
                    "kubernetes.io/hostname": self.node_name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                },
            },
            "spec": {},
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": stamp,
                        "lastTransitionTime": stamp,
                    }
                ],
                "addresses": [
                    {"type": "InternalIP", "address": self.node_ip},
                    {"type": "Hostname", "address": self.node_name},
                ],
                "capacity": capacity,
                "allocatable": dict(capacity),
                "nodeInfo": {
                    "machineID": digest[:32],
                    "systemUUID": str(uuid.UUID(digest[:32])),
                    "bootID": str(uuid.UUID(digest[32:])),
                    "kernelVersion": "6.1.0-fake",
                    "osImage": "Debian GNU/Linux 12 (bookworm)",
                    "containerRuntimeVersion": "containerd://2.0.0",
                    "kubeletVersion": "v1.37.0",
                    "kubeProxyVersion": "",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                },
            },
        }
        self.store.create(nodes_rt, node, keep_status=True)

    # --- test controls ------------------------------------------------------------------------

    def stick(self, namespace: str, name: str) -> None:
        """Never finish terminating this pod (until `unstick`)."""
        with self._cond:
            self._stuck.add((namespace, name))

    def unstick(self, namespace: str, name: str) -> None:
        """Let a stuck pod finish terminating (at once if its grace period already passed)."""
        with self._cond:
            self._stuck.discard((namespace, name))
        with self.store.cond:
            self.store.cond.notify_all()

    def removed_at(self, namespace: str, name: str) -> float | None:
        """`time.monotonic()` when the pod disappeared from this node, if it did."""
        with self._cond:
            return self._removed.get((namespace, name))

    def removed(self) -> dict[PodKey, float]:
        """Every pod removal seen on this node: (namespace, name) -> monotonic time."""
        with self._cond:
            return dict(self._removed)

    def wait_removed(self, namespace: str, name: str, timeout: float = 10.0) -> bool:
        """Block until the pod is gone from this node (True) or the timeout passes (False)."""
        return bool(wait_notified(self._cond, lambda: (namespace, name) in self._removed, timeout))

    def pods(self) -> list[JSON]:
        """The pods currently bound to this node."""
        pods_rt, _ = self._types()
        with self.store.locked():
            return [
                dict(p)
                for p in self.store.iter_objects(pods_rt)
                if (p.get("spec") or {}).get("nodeName") == self.node_name
            ]

    def _pod_ip(self, uid: str) -> str:
        if uid not in self._pod_ips:
            self._pod_ips[uid] = f"10.244.0.{len(self._pod_ips) + 2}"
        return self._pod_ips[uid]

    def set_ready(self, namespace: str, name: str, ready: bool = True) -> JSON:
        """Report the pod Running with Ready/ContainersReady `ready`, and container statuses."""
        pods_rt, _ = self._types()

        def report(pod: JSON) -> JSON:
            stamp = rfc3339(now())
            uid = str(pod["metadata"].get("uid", ""))
            status = pod.setdefault("status", {})
            status["phase"] = "Running"
            status.setdefault("hostIP", self.node_ip)
            status.setdefault("hostIPs", [{"ip": self.node_ip}])
            status.setdefault("podIP", self._pod_ip(uid))
            status.setdefault("podIPs", [{"ip": status["podIP"]}])
            status.setdefault("startTime", stamp)
            conditions = list(status.get("conditions") or [])
            value = "True" if ready else "False"
            for kind, state in (
                ("PodReadyToStartContainers", "True"),
                ("Initialized", "True"),
                ("Ready", value),
                ("ContainersReady", value),
                ("PodScheduled", "True"),
            ):
                conditions = _with_condition(conditions, kind, state, stamp)
            status["conditions"] = conditions
            previous = {c.get("name"): c for c in status.get("containerStatuses") or []}
            statuses = []
            for container in (pod.get("spec") or {}).get("containers") or []:
                cname = str(container.get("name"))
                old = previous.get(cname) or {}
                started_at = ((old.get("state") or {}).get("running") or {}).get("startedAt", stamp)
                image = str(container.get("image", ""))
                statuses.append(
                    {
                        "name": cname,
                        "image": image,
                        "imageID": f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}",
                        "containerID": container_id(uid, cname),
                        "ready": ready,
                        "started": True,
                        "restartCount": int(old.get("restartCount", 0)),
                        "state": {"running": {"startedAt": started_at}},
                    }
                )
            status["containerStatuses"] = statuses
            return pod

        return self.store.mutate(pods_rt, namespace, name, report, subresource="status")

    def set_phase(self, namespace: str, name: str, phase: str, *, exit_code: int = 0) -> JSON:
        """Report a phase; Succeeded/Failed also terminate the containers and clear Ready."""
        if phase == "Running":
            return self.set_ready(namespace, name, ready=True)
        pods_rt, _ = self._types()

        def report(pod: JSON) -> JSON:
            stamp = rfc3339(now())
            uid = str(pod["metadata"].get("uid", ""))
            status = pod.setdefault("status", {})
            status["phase"] = phase
            conditions = list(status.get("conditions") or [])
            for kind in ("Ready", "ContainersReady"):
                conditions = _with_condition(conditions, kind, "False", stamp)
            status["conditions"] = conditions
            if phase in ("Succeeded", "Failed"):
                reason = "Completed" if phase == "Succeeded" else "Error"
                status["containerStatuses"] = [
                    {
                        "name": str(c.get("name")),
                        "image": str(c.get("image", "")),
                        "imageID": "",
                        "containerID": container_id(uid, str(c.get("name"))),
                        "ready": False,
                        "started": False,
                        "restartCount": 0,
                        "state": {
                            "terminated": {
                                "exitCode": exit_code,
                                "reason": reason,
                                "finishedAt": stamp,
                            }
                        },
                    }
                    for c in (pod.get("spec") or {}).get("containers") or []
                ]
            return pod

        return self.store.mutate(pods_rt, namespace, name, report, subresource="status")

    # --- the loop -----------------------------------------------------------------------------

    def _run(self, cursor: int) -> None:
        pods_rt, _ = self._types()
        while not self._stop.is_set() and not self.store.closed:
            timeout = _IDLE_WAKEUP_SECONDS
            with self._cond:
                if self._deadlines:
                    soonest = min(d for d, _ in self._deadlines.values())
                    timeout = max(0.0, min(timeout, soonest - time.monotonic()))
            self.store.wait_until(functools.partial(self._should_wake, cursor), timeout)
            if self._stop.is_set():
                return
            with self.store.locked():
                if cursor < self.store.compacted_rv:
                    events: list[StoredEvent] = []
                    for pod in self.store.iter_objects(pods_rt):
                        self._observe(pod)
                else:
                    events = self.store.events_after(cursor)
                cursor = self.store.resource_version
            for event in events:
                if event.key == pods_rt.key:
                    self._handle(event)
            self._finish_due(pods_rt)

    def _should_wake(self, cursor: int) -> bool:
        return self.store.resource_version > cursor or self._stop.is_set()

    def _on_my_node(self, pod: JSON) -> bool:
        return (pod.get("spec") or {}).get("nodeName") == self.node_name

    def _handle(self, event: StoredEvent) -> None:
        key = (namespace_of(event.obj), name_of(event.obj))
        if event.type == "DELETED":
            with self._cond:
                self._deadlines.pop(key, None)
                if self._on_my_node(event.obj):
                    self._removed[key] = time.monotonic()
                    self._cond.notify_all()
            return
        self._observe(event.obj)

    def _observe(self, pod: JSON) -> None:
        key = (namespace_of(pod), name_of(pod))
        if not self._on_my_node(pod):
            with self._cond:
                self._deadlines.pop(key, None)
            return
        if is_deleting(pod):
            grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
            delay = grace * self.time_scale
            if self.max_termination_seconds is not None:
                delay = min(delay, self.max_termination_seconds)
            due = time.monotonic() + delay
            uid = str(pod["metadata"].get("uid", ""))
            with self._cond:
                previous = self._deadlines.get(key)
                if previous is None or due < previous[0]:
                    self._deadlines[key] = (due, uid)
            return
        uid = str(pod["metadata"].get("uid", ""))
        phase = (pod.get("status") or {}).get("phase")
        if self.auto_ready and uid not in self._readied and phase in (None, "Pending"):
            self._readied.add(uid)
            try:
                self.set_ready(*key)
            except ApiError:
                _log.debug("fake kubelet could not ready %s/%s", *key)

    def _finish_due(self, pods_rt: ResourceType) -> None:
        moment = time.monotonic()
        with self._cond:
            due = [
                (key, uid)
                for key, (deadline, uid) in self._deadlines.items()
                if deadline <= moment and key not in self._stuck
            ]
            for key, _ in due:
                del self._deadlines[key]
        for (namespace, name), uid in due:
            try:
                self.store.delete(
                    pods_rt,
                    namespace,
                    name,
                    DeleteOptions(grace_period_seconds=0, precondition_uid=uid),
                )
            except ApiError as exc:
                # Gone already, or replaced by a pod of the same name: nothing to finish.
                _log.debug("fake kubelet final delete of %s/%s: %s", namespace, name, exc.message)
