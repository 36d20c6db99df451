"""Running a reflector as a supervised root task that gates ``/readyz`` on its first sync."""

from __future__ import annotations

import asyncio
from typing import Any

from agent.kube.reflector import ProjectingReflector
from agent.runtime.supervisor import STAGE_WATCH, RootTask
from agent.telemetry.health import Health


def watch_task(reflector: ProjectingReflector[Any], health: Health) -> RootTask:
    """A root task running one reflector; ``/readyz`` waits for its first sync."""
    check = f"watch:{reflector.name}"
    health.expect(check)

    async def run() -> None:
        async def mark_synced() -> None:
            await reflector.synced.wait()
            health.set_ready(check)

        marker = asyncio.create_task(mark_synced())
        try:
            await reflector.run()
        finally:
            marker.cancel()

    return RootTask(name=f"watch-{reflector.name}", run=run, stage=STAGE_WATCH)
