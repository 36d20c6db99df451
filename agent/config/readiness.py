"""The readiness gate: which taint we hold on a new node, and what it waits for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import Duration, setting


@dataclass(frozen=True)
class ReadinessConfig:
    enabled: bool = setting(True)
    preset: Literal["default", "gardener"] = setting("default")
    namespaces: tuple[str, ...] = setting(factory=lambda: ("kube-system",))
    mode: Literal["bootstrap-only", "continuous"] = setting("bootstrap-only")
    hold_time: Duration = setting(Duration(30.0))
    resync_period: Duration = setting(Duration(300.0), minimum=10)
    event_interval: Duration = setting(Duration(60.0), minimum=1)

    def validate(self) -> list[FieldError]:
        errors = []
        if not self.namespaces:
            errors.append(FieldError("namespaces", "must name at least one namespace"))
        if self.mode == "continuous" and self.hold_time < 1:
            errors.append(FieldError("holdTime", "must be >= 1s in continuous mode"))
        return errors
