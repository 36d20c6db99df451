"""structlog set-up: JSON for machines, console for people, the node on every line, stderr.

Logs go to stderr, always: stdout carries what a command prints (a table, a ``--json``
document), and a warning logged while it runs must not make that document invalid. The agent
under systemd (journald) and in its DaemonSet (the container's log) has stderr collected too.

The node name is added by a processor rather than a context variable because lines are
also logged from worker threads (watches, blocking D-Bus fallbacks) that do not inherit
the event loop's context.

Every value can come from outside (a pod or node name, the API server's message, a file
path), so each renderer makes a line that is safe on a terminal: a JSON line has every
character outside printable ASCII as a ``\\u`` escape (``json.dumps``'s default
``ensure_ascii``), and the console line shows control characters escaped
(``terminaltext.printable``), so a name can neither clear the screen nor start a forged line.
A traceback keeps its line breaks.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from agent.terminaltext import printable

LogFormat = Literal["auto", "json", "console"]


def _static_fields(fields: dict[str, str]) -> Processor:
    def add(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
        for key, value in fields.items():
            event.setdefault(key, value)
        return event

    return add


_OURS = frozenset({"timestamp", "level"})
"""Keys whose values our own processors set; the console renderer pads and colours them."""
_MULTILINE = frozenset({"exception", "stack"})
_QUOTED = frozenset(" =\"'")


@dataclass(frozen=True)
class _Shown:
    """A value already escaped: the console renderer prints ``repr``/``str`` of what is not a
    ``str`` as it is, so a value it would otherwise quote with ``repr`` is not escaped twice."""

    text: str

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _console_value(value: object, *, quote: bool) -> object:
    if isinstance(value, str):
        text = printable(value)
        if quote and _QUOTED.intersection(text):
            text = '"' + text.replace('"', '\\"') + '"'
        return _Shown(text)
    shown = repr(value)  # what the renderer prints; builtins' reprs are already escaped
    return value if shown.isprintable() else _Shown(printable(shown))


def _multiline(text: str) -> str:
    return "".join(c if c == "\n" or c.isprintable() else printable(c) for c in text)


def _escape_for_console(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """Every value (and key) of the line escaped before ``ConsoleRenderer`` lays it out."""
    escaped: EventDict = {}
    for key, value in event.items():
        if key in _OURS:
            escaped[key] = value
        elif key in _MULTILINE and isinstance(value, str):
            escaped[key] = _multiline(value)
        else:
            escaped[printable(key)] = _console_value(value, quote=key != "event")
    return escaped


def configure_logging(
    *,
    level: str = "info",
    fmt: LogFormat = "auto",
    node: str | None = None,
    component: str = "agent",
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and route the stdlib loggers (kubernetes, urllib3) through it, onto
    ``stream`` (stderr unless a test gives its own)."""
    out = stream or sys.stderr
    use_json = fmt == "json" or (fmt == "auto" and not out.isatty())
    fields = {"component": component}
    if node:
        fields["node"] = node
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _static_fields(fields),
    ]
    rendering: list[Processor] = (
        [structlog.processors.JSONRenderer()]  # json.dumps: ensure_ascii
        if use_json
        else [_escape_for_console, structlog.dev.ConsoleRenderer(colors=out.isatty())]
    )
    numeric = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            *rendering,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                *rendering,
            ],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # Library chatter (urllib3 retries, client warnings) only matters when it is a problem.
    root.setLevel(max(numeric, logging.WARNING))


def get_logger(name: str, **bound: Any) -> Any:
    """A structlog logger with ``subsystem=<name>`` and any extra fields bound."""
    return structlog.get_logger(subsystem=name, **bound)
