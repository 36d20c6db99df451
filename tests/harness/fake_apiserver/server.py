"""`FakeApiServer`: the facade tests use (lifecycle, client config, in-process access, kubelets).

It wires the pieces together (registry, store, strategies, evictions/disruption controller,
operations, HTTP server, faults, request log), seeds what a fresh cluster has (the four system
namespaces, the two system priority classes) and offers direct in-process access for arranging
and inspecting state without HTTP. In-process writes go through the same store, so watchers see
them like any other write.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Self

from kubernetes import client

from ..startstop import StartsAndStops
from ..waiting import wait_notified
from .deletion import DeleteOptions
from .eviction import Evictions
from .faults import FaultInjector
from .http import FakeHttpServer, HttpContext
from .kubelet import FakeKubelet
from .objects import deep_copy, meta, namespace_of
from .operations import Operations, apply_patch
from .patches import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from .requestlog import Predicate, RecordedRequest, RequestLog
from .resources import METRICS_TYPES, ResourceRegistry, ResourceType
from .selectors import object_filter, parse_field_selector, parse_label_selector
from .status import ApiError
from .store import Store
from .strategies import SYSTEM_PRIORITY_CLASSES, strategy_for
from .watch import present

JSON = dict[str, Any]
PatchType = Literal["strategic", "merge", "json"]

DEFAULT_TOKEN = "fake-apiserver-token"  # noqa: S105  # a dummy bearer token, never checked
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PATCH_CONTENT_TYPES: dict[str, str] = {
    "strategic": STRATEGIC_MERGE_PATCH,
    "merge": MERGE_PATCH,
    "json": JSON_PATCH,
}


class FakeApiServer(StartsAndStops):
    """A stateful fake Kubernetes API server on 127.0.0.1 (see README.md)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        history_limit: int = 1000,
        bookmark_interval: float = 1.0,
        pdb_controller: bool = True,
        git_version: str = "v1.37.0",
    ) -> None:
        self.registry = ResourceRegistry()
        self.store = Store(self.registry, strategy_for, history_limit=history_limit)
        self.evictions = Evictions(self.store, controller=pdb_controller)
        self.operations = Operations(self.store, self.evictions, bookmark_interval)
        self.faults = FaultInjector()
        self.request_log = RequestLog()
        self._context = HttpContext(
            operations=self.operations,
            registry=self.registry,
            faults=self.faults,
            log=self.request_log,
            git_version=git_version,
        )
        self._address = (host, port)
        self._http: FakeHttpServer | None = None
        self._thread: threading.Thread | None = None
        self._kubelets: list[FakeKubelet] = []
        self._seed()

    def _seed(self) -> None:
        namespaces = self.registry.resolve("namespaces")
        for name in SYSTEM_NAMESPACES:
            self.store.create(namespaces, {"metadata": {"name": name}})
        priority_classes = self.registry.resolve("priorityclasses")
        for name, value in SYSTEM_PRIORITY_CLASSES.items():
            self.store.create(
                priority_classes,
                {
                    "metadata": {"name": name},
                    "value": value,
                    "description": "Used for system critical pods that must not be moved from "
                    "their current node."
                    if name == "system-node-critical"
                    else "Used for system critical pods that must run in the cluster, but can be "
                    "moved to another node if necessary.",
                },
            )

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind the port and serve in a background (daemon) thread."""
        if self._http is not None:
            return self
        self._http = FakeHttpServer(self._address, self._context)
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.5},
            name="fake-apiserver",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop kubelets, end watches and hanging requests, close connections and the port."""
        for kubelet in self._kubelets:
            kubelet.stop()
        self._kubelets.clear()
        if self._http is None:
            return
        self._context.stopping.set()
        self.faults.release_all()
        self.store.close()
        self._http.stop_serving()
        with contextlib.suppress(TimeoutError):
            # Let open watches end their chunked streams cleanly before sockets go away.
            self.wait_for_watches_closed(timeout=2)
        self._http.close_connections()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._http = None
        self._thread = None

    @property
    def port(self) -> int:
        """The bound TCP port (after start())."""
        if self._http is None:
            raise RuntimeError("the fake API server is not started")
        return int(self._http.server_address[1])

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://{self._address[0]}:{self.port}"

    # --- client configuration -----------------------------------------------------------------

    def configuration(self, token: str = DEFAULT_TOKEN) -> client.Configuration:
        """A client Configuration pointing at this server with a dummy bearer token."""
        config = client.Configuration(host=self.url)
        config.api_key = {"authorization": token}
        config.api_key_prefix = {"authorization": "Bearer"}
        return config

    def api_client(self, token: str = DEFAULT_TOKEN) -> client.ApiClient:
        """An `ApiClient` for this server (close it, or use it as a context manager)."""
        return client.ApiClient(self.configuration(token))

    def write_kubeconfig(
        self, path: str | Path, *, namespace: str = "default", token: str = DEFAULT_TOKEN
    ) -> Path:
        """Write a kubeconfig (JSON, which is valid YAML) for this server; returns its path."""
        target = Path(path)
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "fake", "namespace": namespace},
                }
            ],
            "current-context": "fake",
            "preferences": {},
        }
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(kubeconfig, indent=2) + "\n")
        return target

    # --- in-process access --------------------------------------------------------------------

    def resource(self, name: str) -> ResourceType:
        """Resolve `pods`, `po`, `Pod`, `daemonsets.apps`, `events.events.k8s.io`..."""
        return self.registry.resolve(name)

    def _type_of(self, obj: JSON, resource: str | None) -> ResourceType:
        if resource is not None:
            return self.resource(resource)
        rt = self.registry.for_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rt is None:
            raise KeyError(
                f"no served resource for apiVersion={obj.get('apiVersion')!r} "
                f"kind={obj.get('kind')!r}; pass resource="
            )
        return rt

    def create(
        self, obj: JSON, *, resource: str | None = None, namespace: str | None = None
    ) -> JSON:
        """Create an object (typed by apiVersion/kind or `resource`), keeping any status given.

        Namespaced objects default to the `default` namespace. Unlike a POST, a status in `obj`
        is kept, so tests can seed e.g. Running pods or Ready nodes directly.
        """
        rt = self._type_of(obj, resource)
        body = deep_copy(obj)
        if rt.namespaced:
            meta(body)["namespace"] = namespace or namespace_of(body) or "default"
        return present(self.store.create(rt, body, keep_status=True), rt)

    def serve_metrics_api(self, served: bool = True) -> None:
        """Serve metrics.k8s.io/v1beta1 (NodeMetrics, PodMetrics: get and list, in
        discovery too) as a cluster with metrics-server does; ``False`` stops serving it
        (discovery then says 404, as without metrics-server). Arrange its figures
        in-process: ``create``/``update`` of ``kubeobjects.node_metrics``/``pod_metrics``."""
        if served:
            self.registry.register(METRICS_TYPES)
        else:
            for rt in METRICS_TYPES:
                self.registry.unregister(rt.group, rt.plural)

    def seed(self, objects: Iterable[JSON]) -> int:
        """Create many objects at once, as ``create`` does one by one; returns how many.

        Every object goes through the same store create (validation, defaults, uid,
        resourceVersion, watch event). Only the PDB status controller is deferred: it runs
        once per touched namespace at the end instead of after every write (see
        ``Evictions.deferred``), under one lock hold, so no reader sees the statuses before.
        """
        count = 0
        with self.store.locked(), self.evictions.deferred():
            for given in objects:
                rt = self._type_of(given, None)
                body = given
                if rt.namespaced and not namespace_of(given):
                    body = {**given, "metadata": {**meta(given), "namespace": "default"}}
                # The store copies what it keeps; the copy it returns is dropped here.
                self.store.create(rt, body, keep_status=True)
                count += 1
        return count

    def get(self, resource: str, name: str, namespace: str | None = None) -> JSON:
        """A copy of one object; raises `ApiError` (404) if missing."""
        rt = self.resource(resource)
        return present(self.store.get(rt, self._ns(rt, namespace), name), rt)

    def try_get(self, resource: str, name: str, namespace: str | None = None) -> JSON | None:
        """Like `get`, but None when the object does not exist."""
        try:
            return self.get(resource, name, namespace)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def exists(self, resource: str, name: str, namespace: str | None = None) -> bool:
        """Whether the object exists (including while it is terminating)."""
        return self.try_get(resource, name, namespace) is not None

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[JSON]:
        """Objects of a resource (all namespaces when `namespace` is None), in key order."""
        rt = self.resource(resource)
        accept = object_filter(
            namespace,
            parse_label_selector(label_selector),
            parse_field_selector(field_selector, rt),
        )
        items, _ = self.store.list(rt, namespace, accept)
        return [present(i, rt) for i in items]

    def update(
        self, obj: JSON, *, resource: str | None = None, subresource: str | None = None
    ) -> JSON:
        """PUT semantics (a stale metadata.resourceVersion is a 409 `ApiError`)."""
        rt = self._type_of(obj, resource)
        body = deep_copy(obj)
        if rt.namespaced:
            meta(body)["namespace"] = namespace_of(body) or "default"
        return present(self.store.update(rt, body, subresource=subresource), rt)

    def update_status(self, obj: JSON, *, resource: str | None = None) -> JSON:
        """PUT to the status subresource."""
        return self.update(obj, resource=resource, subresource="status")

    def patch(
        self,
        resource: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType | None = None,
        subresource: str | None = None,
    ) -> JSON:
        """PATCH an object: strategic merge by default (merge for custom resources), or `json`."""
        rt = self.resource(resource)
        if patch_type is None:
            patch_type = "merge" if rt.custom else "strategic"
        content_type = _PATCH_CONTENT_TYPES[patch_type]
        result = self.store.mutate(
            rt,
            self._ns(rt, namespace),
            name,
            lambda current: apply_patch(rt, current, patch, content_type),
            subresource=subresource,
        )
        return present(result, rt)

    def mutate(
        self,
        resource: str,
        name: str,
        change: Callable[[JSON], JSON],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> JSON:
        """Atomic read-modify-write: `change` gets the current object, returns the new one."""
        rt = self.resource(resource)
        return present(
            self.store.mutate(rt, self._ns(rt, namespace), name, change, subresource=subresource),
            rt,
        )

    def delete(
        self,
        resource: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> JSON:
        """DELETE with the real semantics (graceful pods stay, finalizers keep objects)."""
        rt = self.resource(resource)
        options = DeleteOptions(
            grace_period_seconds=grace_period_seconds,
            precondition_uid=uid,
            precondition_resource_version=resource_version,
        )
        obj, _ = self.store.delete(rt, self._ns(rt, namespace), name, options)
        return present(obj, rt)

    def bind(self, namespace: str, name: str, node: str) -> JSON:
        """Schedule a pod onto a node (the binding subresource)."""
        rt = self.resource("pods")
        return present(self.operations.bind_pod(rt, namespace, name, node), rt)

    def evict(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> JSON:
        """Evict a pod in-process (same PDB checks as the HTTP eviction subresource)."""
        body: JSON = {"metadata": {"name": name, "namespace": namespace}}
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        return self.evictions.evict(namespace, name, body)

    @staticmethod
    def _ns(rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "default") if rt.namespaced else ""

    # --- waiting and watch history ------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The current global resourceVersion."""
        return str(self.store.resource_version)

    def compact(self) -> None:
        """Drop all watch history: watching from any earlier resourceVersion gets 410."""
        self.store.compact()

    def wait_for(
        self,
        resource: str,
        name: str,
        predicate: Callable[[JSON | None], bool],
        namespace: str | None = None,
        timeout: float = 10.0,
    ) -> JSON | None:
        """Block until `predicate(object or None)` holds; returns the object (TimeoutError)."""
        rt = self.resource(resource)
        ns = self._ns(rt, namespace)

        def holds() -> bool:
            current = self.store.peek(rt, ns, name)
            return predicate(None if current is None else present(current, rt))

        if not self.store.wait_until(holds, timeout):
            raise TimeoutError(f"{rt.qualified} {ns}/{name}: condition not met within {timeout} s")
        current = self.store.peek(rt, ns, name)
        return None if current is None else present(current, rt)

    def wait_deleted(
        self, resource: str, name: str, namespace: str | None = None, timeout: float = 10.0
    ) -> None:
        """Block until the object is gone (TimeoutError otherwise)."""
        self.wait_for(resource, name, lambda obj: obj is None, namespace, timeout)

    def active_watches(self, resource: str | None = None) -> int:
        """How many watch streams are open (optionally for one resource)."""
        with self._context.watches_changed:
            return self._count_watches(resource)

    def _count_watches(self, resource: str | None) -> int:
        key = self.resource(resource).key if resource else None
        return sum(1 for r in self._context.active_watches if key is None or r.rt.key == key)

    def cut_watches(self) -> int:
        """Break every open watch stream mid-stream (no final chunk), as a lost connection
        would; returns how many were cut. Clients see a read error and reconnect."""
        with self._context.watches_changed:
            connections = list(self._context.watch_connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        return len(connections)

    def wait_for_watches(self, resource: str, count: int = 1, timeout: float = 10.0) -> None:
        """Block until at least `count` watches on `resource` are open (TimeoutError)."""
        self._wait_watch_count(resource, lambda n: n >= count, f"at least {count}", timeout)

    def wait_for_watches_closed(self, resource: str | None = None, timeout: float = 10.0) -> None:
        """Block until no watch (on `resource`, or at all) is open (TimeoutError)."""
        self._wait_watch_count(resource, lambda n: n == 0, "no", timeout)

    def _wait_watch_count(
        self, resource: str | None, accept: Callable[[int], bool], wanted: str, timeout: float
    ) -> None:
        changed = self._context.watches_changed
        if not wait_notified(changed, lambda: accept(self._count_watches(resource)), timeout):
            raise TimeoutError(f"{wanted} watches on {resource} within {timeout} s")

    # --- kubelets -----------------------------------------------------------------------------

    def kubelet(
        self,
        node_name: str,
        *,
        time_scale: float = 1.0,
        max_termination_seconds: float | None = None,
        auto_ready: bool = False,
        register_node: bool = True,
    ) -> FakeKubelet:
        """Start a fake kubelet for `node_name` (stopped with the server)."""
        kubelet = FakeKubelet(
            self.store,
            node_name,
            time_scale=time_scale,
            max_termination_seconds=max_termination_seconds,
            auto_ready=auto_ready,
            register_node=register_node,
        )
        self._kubelets.append(kubelet.start())
        return kubelet

    # --- request log --------------------------------------------------------------------------

    def requests(
        self,
        method: str | None = None,
        path_contains: str | None = None,
        *,
        path_regex: str | None = None,
        status: int | None = None,
        predicate: Predicate | None = None,
    ) -> builtins.list[RecordedRequest]:
        """Recorded HTTP requests matching every given criterion, oldest first."""
        return self.request_log.filter(method, path_contains, path_regex, status, predicate)

    def wait_for_request(self, predicate: Predicate, timeout: float = 5.0) -> RecordedRequest:
        """Block until a matching request was received (TimeoutError otherwise)."""
        return self.request_log.wait_for(predicate, timeout)

    def clear_requests(self) -> None:
        """Forget the recorded requests."""
        self.request_log.clear()

    @contextmanager
    def outage(
        self, mode: Literal["status", "drop"] = "status", status: int = 503
    ) -> Iterator[None]:
        """Shorthand for `faults.outage(...)`."""
        with self.faults.outage(mode, status):
            yield
