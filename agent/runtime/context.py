"""Everything a capability needs from the process, handed over in one frozen bundle.

The entrypoint builds it once; capabilities read what they need. Kubernetes members are
``None`` in node-only mode, and every capability must cope with that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from agent.clock import Clock
from agent.config import AgentConfig
from agent.kube.api import KubeApi
from agent.kube.client import AsyncKube
from agent.kube.events import EventRecorder
from agent.kube.nodestate import NodeState
from agent.kube.patches import NodePatcher
from agent.node.facts import NodeFacts
from agent.node.paths import HostPaths
from agent.runtime.status import StatusBoard
from agent.telemetry.health import Health


@dataclass(frozen=True)
class KubeContext:
    api: KubeApi
    kube: AsyncKube
    node_state: NodeState
    events: EventRecorder
    patcher: NodePatcher


@dataclass(frozen=True)
class AgentContext:
    config: AgentConfig
    node_name: str
    paths: HostPaths
    registry: CollectorRegistry
    health: Health
    clock: Clock
    facts: NodeFacts
    """The start-up snapshot of node facts (cgroup mode, noswap, kernel, memory)."""
    cluster: KubeContext | None
    """``None`` in node-only mode."""
    status: StatusBoard = field(default_factory=StatusBoard)
    """Capabilities publish their state here; the NodeReport subscribes (loop thread only)."""
