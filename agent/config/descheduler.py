"""The central descheduler's own config (its policy is a separate, upstream-format file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.config.errors import FieldError
from agent.config.schema import Duration, HostPort, setting

DEFAULT_DESCHEDULER_METRICS_BIND_ADDRESS = "127.0.0.1:9478"


@dataclass(frozen=True)
class DeschedulerConfig:
    kubeconfig: str = setting("")
    metrics_bind_address: HostPort = setting(HostPort(DEFAULT_DESCHEDULER_METRICS_BIND_ADDRESS))
    log_level: Literal["debug", "info", "warning", "error"] = setting("info")
    log_format: Literal["auto", "json", "console"] = setting("auto")
    policy_file: str = setting("")
    descheduling_interval: Duration = setting(Duration(0.0))
    dry_run: bool = setting(False)

    def validate(self) -> list[FieldError]:
        if self.policy_file and not self.policy_file.startswith("/"):
            return [FieldError("policyFile", "must be an absolute path")]
        return []
