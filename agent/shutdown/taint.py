"""Our Node's ``kubelet-companion.io/shutting-down:NoSchedule`` taint, converged in the background.

The taint keeps the scheduler from placing pods on a node that is going down (kubelet
rejects them at admission instead, after they were already bound). It is written through
``NodePatcher``, so the patch is guarded by a ``test`` on resourceVersion and only our own
taint ever changes.

The shutdown must not wait for the API server to set it, and a cancellation or a reboot
must not give up removing it just because the API server is down for a while. So the
wanted state is handed to ``TaintKeeper.want``, which (re)starts one task that retries
until the Node shows that state; a newer wish cancels the older task. The resourceVersion
guard makes a late write of the older wish fail rather than undo the newer one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from agent import DOMAIN
from agent.kube.api import JsonObject
from agent.kube.backoff import Backoff
from agent.kube.errors import KubeError, NotFound
from agent.kube.patches import NodePatcher, Op, Taint, taint_ops

SHUTTING_DOWN = Taint(key=f"{DOMAIN}/shutting-down", effect="NoSchedule")
_log = structlog.get_logger(subsystem="shutdown.taint")


def add_taint(node: JsonObject) -> list[Op]:
    return taint_ops(node, ensure=SHUTTING_DOWN)


def remove_taint(node: JsonObject) -> list[Op]:
    return taint_ops(node, remove=SHUTTING_DOWN.key)


class TaintKeeper:
    def __init__(
        self,
        patcher: NodePatcher,
        cached_node: Callable[[], JsonObject | None],
        *,
        monotonic: Callable[[], float],
        backoff: Backoff = Backoff(initial=0.2, cap=5.0),
    ) -> None:
        self.patcher = patcher
        self.cached_node = cached_node
        self.monotonic = monotonic
        self.backoff = backoff
        self._task: asyncio.Task[bool] | None = None

    def want(self, present: bool, *, deadline: float | None = None) -> asyncio.Task[bool]:
        """Converge to ``present`` (until ``deadline``, a monotonic time, if given)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = asyncio.get_running_loop().create_task(
            self._converge(present, deadline), name=f"shutdown-taint-{present}"
        )
        return self._task

    async def _converge(self, present: bool, deadline: float | None) -> bool:
        build = add_taint if present else remove_taint
        what = "add shutting-down taint" if present else "remove shutting-down taint"
        failures = 0
        node = self.cached_node()
        while True:
            try:
                await self.patcher.update(build, what=what, node=node, deadline=deadline)
                _log.info(
                    "node taint set" if present else "node taint removed", key=SHUTTING_DOWN.key
                )
                return True
            except NotFound:
                _log.warning("our Node does not exist; cannot change its taint", what=what)
                return False
            except KubeError as error:
                failures += 1
                wait = self.backoff.delay(min(failures - 1, 8))
                if deadline is not None and self.monotonic() + wait > deadline:
                    _log.error("gave up on the taint at the deadline", what=what, error=str(error))
                    return False
                _log.warning("node taint not written yet; retrying", what=what, error=str(error))
                node = None
                await asyncio.sleep(wait)

    async def wait(self) -> bool:
        task = self._task
        if task is None:
            return True
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                return False
            raise

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
