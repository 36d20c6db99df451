"""Guarded JSON patches on our Node: only keys we own, never a lost update.

Every write to the shared Node object goes through ``NodePatcher.update``. It reads the
Node, asks a pure builder for the operations, and sends them behind a ``test`` op on
``/metadata/resourceVersion``. If anyone changed the Node in between, the API server
answers 422 (test failed) or 409, and we re-read and rebuild, so a taint or label someone
else added a moment ago is never dropped. Any other 422 (an operation that does not apply)
is a bug in a builder and fails at once: a re-read would not make it valid. Builders touch
only owned keys; ``NodePatcher`` checks that before sending anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from agent.kube.backoff import Backoff, RetryPolicy, retry_after_of
from agent.kube.errors import RETRYABLE, Conflict, Invalid, KubeError
from agent.kube.jsontypes import JsonObject
from agent.kube.resources import NODES
from agent.kubesemantics.wellknown import NO_SCHEDULE

Op = dict[str, Any]
GUARD_PATH = "/metadata/resourceVersion"
"""What the ``test`` op in front of every Node patch checks."""
Builder = Callable[[JsonObject], list[Op]]
_log = structlog.get_logger(subsystem="kube.patches")

if TYPE_CHECKING:
    # A type only: the pure helpers here (taints_of, taint_ops) are read by commands that
    # never reach a cluster, and the client's import would be most of their start-up.
    from agent.kube.client import AsyncKube


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str = NO_SCHEDULE
    value: str | None = None

    def as_json(self) -> JsonObject:
        taint: JsonObject = {"key": self.key, "effect": self.effect}
        if self.value is not None:
            taint["value"] = self.value
        return taint


def escape_pointer(token: str) -> str:
    """RFC 6901: ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def taints_of(node: Mapping[str, Any]) -> list[JsonObject]:
    return list((node.get("spec") or {}).get("taints") or [])


def has_taint(node: JsonObject, key: str, effect: str | None = None) -> bool:
    return any(
        taint.get("key") == key and (effect is None or taint.get("effect") == effect)
        for taint in taints_of(node)
    )


def taint_ops(
    node: JsonObject, *, ensure: Taint | None = None, remove: str | None = None
) -> list[Op]:
    """Operations that add ``ensure`` and/or drop taints keyed ``remove``; [] if no change.

    ``spec.taints`` is an atomic list, so a change replaces it whole: the new list is the
    current one with only our entries changed, and the guard makes "current" exact.
    """
    current = taints_of(node)
    wanted = [taint for taint in current if remove is None or taint.get("key") != remove]
    if ensure is not None and not any(
        taint.get("key") == ensure.key and taint.get("effect") == ensure.effect for taint in wanted
    ):
        wanted.append(ensure.as_json())
    if wanted == current:
        return []
    if "taints" not in (node.get("spec") or {}):
        return [{"op": "add", "path": "/spec/taints", "value": wanted}]
    return [{"op": "replace", "path": "/spec/taints", "value": wanted}]


def metadata_map_ops(
    node: JsonObject,
    field: str,
    *,
    set_values: Mapping[str, str] | None = None,
    remove: tuple[str, ...] = (),
) -> list[Op]:
    """Operations on ``metadata.labels`` or ``metadata.annotations``, key by key."""
    current = dict((node.get("metadata") or {}).get(field) or {})
    ops: list[Op] = []
    changes = {k: v for k, v in (set_values or {}).items() if current.get(k) != v}
    if changes and field not in (node.get("metadata") or {}):
        return [{"op": "add", "path": f"/metadata/{field}", "value": changes}]
    for key, value in changes.items():
        op = "replace" if key in current else "add"
        ops.append({"op": op, "path": f"/metadata/{field}/{escape_pointer(key)}", "value": value})
    ops.extend(
        {"op": "remove", "path": f"/metadata/{field}/{escape_pointer(key)}"}
        for key in remove
        if key in current
    )
    return ops


def _why(error: KubeError) -> str:
    causes = (error.body.get("details") or {}).get("causes") or []
    details = "; ".join(str(c.get("message")) for c in causes if isinstance(c, dict))
    return f"{error}: {details}" if details else str(error)


class NodeWriter(Protocol):
    """What controllers need from ``NodePatcher`` (tests pass simpler doubles)."""

    async def update(
        self,
        build: Builder,
        *,
        what: str,
        node: JsonObject | None = None,
        deadline: float | None = None,
    ) -> JsonObject: ...


class OwnershipError(RuntimeError):
    """A builder produced an operation on something we do not own (a bug, never sent)."""


def check_ownership(node: JsonObject, ops: list[Op], owns: Callable[[str], bool]) -> None:
    for op in ops:
        path = str(op["path"])
        if path in ("/metadata/labels", "/metadata/annotations"):
            keys = list((op.get("value") or {}).keys())
        elif path.startswith(("/metadata/labels/", "/metadata/annotations/")):
            keys = [path.split("/", 3)[3].replace("~1", "/").replace("~0", "~")]
        elif path == "/spec/taints":
            before = [t for t in taints_of(node) if not owns(str(t.get("key")))]
            after = [t for t in op.get("value") or [] if not owns(str(t.get("key")))]
            if before != after:
                raise OwnershipError("a taint we do not own would change")
            continue
        else:
            raise OwnershipError(f"patch path {path} is outside what we manage")
        for key in keys:
            if not owns(key):
                raise OwnershipError(f"key {key} is not ours")


class NodePatcher:
    """Applies builders to our Node with the resourceVersion guard and retries."""

    def __init__(
        self,
        kube: AsyncKube,
        node_name: str,
        owns: Callable[[str], bool],
        *,
        backoff: Backoff = Backoff(initial=0.05, cap=5.0),
        attempts: int = 12,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.kube = kube
        self.node_name = node_name
        self.owns = owns
        self.policy = RetryPolicy(backoff, attempts=attempts, monotonic=monotonic)
        self._sleep = sleep

    async def update(
        self,
        build: Builder,
        *,
        what: str,
        node: JsonObject | None = None,
        deadline: float | None = None,
    ) -> JsonObject:
        """Apply ``build`` until it yields no operations or the guarded patch lands.

        ``node`` may be a cached copy to try first; a conflict makes us read a fresh one.
        Returns the resulting Node. Raises ``NotFound`` if the Node does not exist, and the
        last ``KubeError`` when attempts or the deadline run out.
        """
        attempt = 0
        server_failures = 0  # 5xx, 429 and timeouts in a row: the server needs time
        lost_races = 0  # guard failures in a row: others wrote between our read and patch
        while True:
            fresh: JsonObject | None = None
            version: object = None
            try:
                if node is None:
                    node = await self.kube.get(NODES, self.node_name)
                ops = build(node)
                if not ops:
                    return node
                check_ownership(node, ops, self.owns)
                version = (node.get("metadata") or {}).get("resourceVersion")
                guarded = [{"op": "test", "path": GUARD_PATH, "value": version}]
                result = await self.kube.patch(NODES, self.node_name, guarded + ops)
                _log.debug("node patched", what=what, ops=len(ops), attempt=attempt)
                return result
            except (Conflict, Invalid, *RETRYABLE) as caught:
                error: KubeError = caught
                if isinstance(error, Invalid) and not error.failed_test(GUARD_PATH):
                    try:
                        fresh = await self._moved_on(error, version)
                    except RETRYABLE as read_error:
                        error = read_error  # the re-read failed: a server failure, retried
                    else:
                        if fresh is None:
                            # A patch the server finds invalid is invalid again after a
                            # re-read.
                            _log.error(
                                "node patch rejected as invalid", what=what, error=_why(error)
                            )
                            raise
                attempt += 1
                if isinstance(error, Conflict | Invalid):
                    # The server answered, so its failures are over. A lost race is fixed
                    # by a fresh read, not by waiting out a server: the first is retried at
                    # once, later ones back off from the bottom of the ladder. Counted with
                    # the server's failures, a Node that others write often was patched
                    # seconds apart after an outage, and each time too late.
                    server_failures = 0
                    lost_races += 1
                    wait = 0.0 if lost_races == 1 else self.policy.wait(lost_races - 1)
                else:
                    server_failures += 1
                    wait = self.policy.wait(server_failures, retry_after=retry_after_of(error))
                if not self.policy.allows(attempt, wait, deadline=deadline):
                    _log.warning("node patch gave up", what=what, error=str(error))
                    if error is caught:
                        raise
                    raise error from caught
                _log.info(
                    "node patch retry",
                    what=what,
                    reason=type(error).__name__,
                    attempt=attempt,
                )
                # A read taken before a wait may be stale by its end on a Node that others
                # write: only a read made just now is patched without reading again.
                node = fresh if wait == 0 else None
                await self._sleep(wait)

    async def _moved_on(self, error: Invalid, version: object) -> JsonObject | None:
        """The Node read afresh, when our guard's resourceVersion is no longer its own.

        A JSON patch that does not apply is a 422 whose causes name the json-patch failure,
        or (kube-apiserver v1.28) a 422 with no causes at all: then the answer cannot say
        whether our ``test`` on the resourceVersion failed or another op did, and the Node
        can. ``None`` when the error names another cause, or the Node has not moved on (so
        the patch itself is invalid, and would be again).
        """
        if error.causes:
            return None
        node = await self.kube.get(NODES, self.node_name)
        if (node.get("metadata") or {}).get("resourceVersion") == version:
            return None
        return node
