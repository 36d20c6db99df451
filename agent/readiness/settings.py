"""The gate's effective settings: the config section with its preset resolved into keys.

Both the controller and the ``readiness`` CLI judge a snapshot through ``evaluate`` here, so
the command shows exactly what the agent would decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.config import ReadinessConfig
from agent.kube.jsontypes import JsonObject
from agent.kube.patches import has_taint
from agent.readiness.checks import Assessment, assess
from agent.readiness.gate import GateView, Mode
from agent.readiness.inputs import Snapshot
from agent.readiness.node_writes import is_completed
from agent.readiness.presets import GateKeys, gate_keys

_DEFAULTS = ReadinessConfig()
"""The config's defaults, the only place they are written: settings built without a config
(a test, a report of a snapshot) take them from there."""


@dataclass(frozen=True)
class GateSettings:
    keys: GateKeys
    namespaces: tuple[str, ...] = _DEFAULTS.namespaces
    startup_taints: tuple[str, ...] = ()
    mode: Mode = _DEFAULTS.mode
    hold_time: float = _DEFAULTS.hold_time
    resync_period: float = _DEFAULTS.resync_period
    event_interval: float = _DEFAULTS.event_interval

    @classmethod
    def from_config(cls, config: ReadinessConfig) -> GateSettings:
        return cls(
            keys=gate_keys(config.preset, config.taint_key),
            namespaces=config.namespaces,
            startup_taints=config.startup_taints,
            mode=config.mode,
            hold_time=config.hold_time,
            resync_period=config.resync_period,
            event_interval=config.event_interval,
        )


def evaluate(
    settings: GateSettings, snapshot: Snapshot, node: JsonObject | None = None
) -> tuple[Assessment, GateView]:
    """Judge ``snapshot`` (with ``node`` standing in for its Node when given)."""
    node = node if node is not None else snapshot.node
    if node is None:
        raise ValueError("the snapshot has no Node")
    assessment = assess(
        node=node,
        pods=snapshot.pods,
        daemon_sets=snapshot.daemon_sets,
        csinode=snapshot.csinode,
        keys=settings.keys,
        namespaces=settings.namespaces,
        startup_taints=settings.startup_taints,
    )
    view = GateView(tainted=has_taint(node, settings.keys.taint), completed=is_completed(node))
    return assessment, view
