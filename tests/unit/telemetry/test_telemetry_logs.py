"""Log output: JSON for machines, console for people, the node on every line."""

import io
import json
import logging

import structlog

from agent.telemetry.logs import configure_logging


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_json_when_not_a_tty_with_the_node_on_every_line() -> None:
    """A pipe gets one JSON object per line carrying node, level and event."""
    stream = io.StringIO()
    configure_logging(fmt="auto", node="node-7", stream=stream)
    structlog.get_logger(subsystem="test").info("hello", answer=42)
    logging.getLogger("urllib3").warning("library says %s", "hi")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (first["event"], first["node"], first["level"], first["answer"]) == (
        "hello",
        "node-7",
        "info",
        42,
    )
    assert (second["event"], second["node"]) == ("library says hi", "node-7")


def test_console_on_a_tty() -> None:
    """A terminal gets readable key=value lines, not JSON."""
    stream = _Terminal()
    configure_logging(fmt="auto", node="node-7", stream=stream)
    structlog.get_logger(subsystem="test").info("hello", answer=42)
    line = stream.getvalue()
    assert "hello" in line
    assert "node" in line
    assert "node-7" in line
    assert not line.lstrip().startswith("{")


def test_level_filtering() -> None:
    """Below the configured level nothing is written."""
    stream = io.StringIO()
    configure_logging(level="warning", fmt="json", node="n", stream=stream)
    structlog.get_logger().info("quiet")
    structlog.get_logger().warning("loud")
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == ["loud"]
