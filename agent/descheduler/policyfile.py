"""The policy file (``--policy-config-file``) read from disk, for the live and offline commands.

The planner in ``core`` is pure: ``core.policy.parse_policy`` takes the parsed document and
never opens a file. Reading is here, one layer above it, through the one YAML reader every
config file goes through (``agent.config.yamlfile``: bounded by bytes read, UTF-8 with an
optional byte-order mark, any parser failure a ``ConfigError``), so the policy is refused as
the agent's config is, with exit 2 and never a traceback.
"""

from __future__ import annotations

import os

from agent.config.yamlfile import parse_yaml, read_yaml
from agent.descheduler.core.policy import DeschedulerPolicy, parse_policy


def parse_policy_text(data: bytes | str, source: str) -> DeschedulerPolicy:
    """Bytes or text of a policy file -> the policy; any parser failure is a ``ConfigError``."""
    return parse_policy(parse_yaml(data, source), source)


def load_policy(path: str | os.PathLike[str]) -> DeschedulerPolicy:
    """Read and validate the policy file at ``path`` (``--policy-config-file``)."""
    return parse_policy(read_yaml(path), str(path))
