"""Log output: JSON for machines, console for people, the node on every line, on stderr,
and every outside value shown escaped."""

import io
import json
import logging
import re

import pytest
import structlog

from agent.telemetry.logs import configure_logging
from agent.terminaltext import printable


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


HOSTILE = "evil\x1b[2J\r\nall NodeReports believed\x00\u202etxt\u200b\x7f\x9b\u2028"
"""A NodeReport name that clears the screen, then forges a line of its own."""
SGR = re.compile(r"\x1b\[[0-9;]*m")
"""The colours the console renderer itself adds on a terminal."""


def _unsafe(text: str) -> list[str]:
    """Characters a terminal would act on: every non-printable one but the line ends."""
    return [char for char in text if not char.isprintable() and char != "\n"]


class _Opaque:
    def __repr__(self) -> str:
        return f"<Opaque {HOSTILE}>"


def _refuse(name: str) -> None:
    raise ValueError(f"bad name {name}")


@pytest.mark.parametrize("stream", [io.StringIO(), _Terminal()], ids=["plain", "colours"])
def test_console_lines_show_outside_values_escaped(stream: io.StringIO) -> None:
    """Event, values (quoted or not), an opaque object's repr and a stdlib library's message
    are each one line, with every control character shown as an escape."""
    configure_logging(fmt="console", node=HOSTILE, stream=stream)
    log = structlog.get_logger(subsystem="test")
    event = f"NodeReport {HOSTILE} not believed"
    log.warning(event, name=HOSTILE, path=f"/tmp/{HOSTILE} x")
    log.info("object", value=_Opaque(), count=3)
    logging.getLogger("urllib3").warning("library says %s", HOSTILE)
    text = SGR.sub("", stream.getvalue())
    lines = text.splitlines()
    assert len(lines) == 3, text
    assert _unsafe(text) == []
    assert f"NodeReport {printable(HOSTILE)} not believed" in lines[0]
    assert f'name="{printable(HOSTILE)}"' in lines[0]  # quoted: it has spaces
    assert f'path="/tmp/{printable(HOSTILE)} x"' in lines[0]
    assert f'node="{printable(HOSTILE)}"' in lines[0]
    assert f"value=<Opaque {printable(HOSTILE)}>" in lines[1]
    assert "count=3" in lines[1]
    assert f"library says {printable(HOSTILE)}" in lines[2]
    assert not any(line.startswith("all NodeReports believed") for line in lines)


def test_a_console_traceback_keeps_its_lines_but_not_the_controls() -> None:
    """An exception's text keeps its line breaks (a traceback reads as one), its control
    characters escaped."""
    stream = io.StringIO()
    configure_logging(fmt="console", stream=stream)
    try:
        _refuse(HOSTILE)
    except ValueError:
        structlog.get_logger().exception("failed")
    text = stream.getvalue()
    assert "Traceback" in text
    assert _unsafe(text) == []
    assert "\\x1b[2J" in text


@pytest.mark.parametrize("value", [HOSTILE, "del\x7f", "\u2028\u2029", "\ud800"])
def test_json_lines_are_exact_and_printable_ascii(value: str) -> None:
    """A JSON log line carries the value exactly (json.loads gives it back) and puts only
    printable ASCII on the terminal: one line whatever the value holds."""
    stream = io.StringIO()
    configure_logging(fmt="json", node=value, stream=stream)
    structlog.get_logger().warning(value, name=value)
    logging.getLogger("kubernetes").warning("%s", value)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert all(" " <= char <= "~" for char in line), line
        entry = json.loads(line)
        assert (entry["event"], entry["node"]) == (value, value)
    assert json.loads(lines[0])["name"] == value


def test_logs_go_to_stderr_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    """Without a stream, lines go to stderr and stdout stays empty (it is the commands')."""
    configure_logging(fmt="json")
    structlog.get_logger().warning("to stderr")
    logging.getLogger("urllib3").warning("also to stderr")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert [json.loads(line)["event"] for line in captured.err.splitlines()] == [
        "to stderr",
        "also to stderr",
    ]
