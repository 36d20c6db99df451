"""``--scheduler-config``: the cluster's ``KubeSchedulerConfiguration``, for the prediction.

Read with the config files' own YAML reader (bounded, never a parser traceback) and parsed by
``core.placement.profile``; every problem is a ``ConfigError`` naming the file and the path.
"""

from __future__ import annotations

import os

from agent.config.errors import ConfigError
from agent.config.yamlfile import read_yaml
from agent.descheduler.core.placement.profile import SchedulerProfile, parse_scheduler_config


def load_scheduler_config(path: str | os.PathLike[str]) -> SchedulerProfile:
    """The ``default-scheduler`` profile of the file at ``path``."""
    profile, errors = parse_scheduler_config(read_yaml(path))
    if errors:
        raise ConfigError(str(path), errors)
    return profile
