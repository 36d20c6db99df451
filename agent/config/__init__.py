"""Settings: YAML documents loaded into frozen dataclasses, validated all at once."""

from agent.config.agent import AgentConfig, HostPathsConfig, KubeConfig
from agent.config.errors import ConfigError, FieldError
from agent.config.loader import load_agent_config, load_file, parse_document
from agent.config.readiness import ReadinessConfig
from agent.config.report import ReportConfig
from agent.config.shutdown import PriorityBucket, ShutdownOptions
from agent.config.swap import MemorySwapConfig
from agent.config.yamlfile import parse_yaml, read_yaml

__all__ = [
    "AgentConfig",
    "ConfigError",
    "FieldError",
    "HostPathsConfig",
    "KubeConfig",
    "MemorySwapConfig",
    "PriorityBucket",
    "ReadinessConfig",
    "ReportConfig",
    "ShutdownOptions",
    "load_agent_config",
    "load_file",
    "parse_document",
    "parse_yaml",
    "read_yaml",
]
