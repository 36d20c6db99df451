"""Wiring of the swap capability into the agent process."""

from __future__ import annotations

from agent.runtime.context import AgentContext
from agent.runtime.supervisor import RootTask


def root_tasks(ctx: AgentContext) -> list[RootTask]:  # noqa: ARG001 - filled in by the capability
    """The swap capability's root tasks (none yet)."""
    return []
