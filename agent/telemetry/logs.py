"""structlog set-up: JSON for machines, console for people, and the node on every line.

The node name is added by a processor rather than a context variable because lines are
also logged from worker threads (watches, blocking D-Bus fallbacks) that do not inherit
the event loop's context.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

LogFormat = Literal["auto", "json", "console"]


def _static_fields(fields: dict[str, str]) -> Processor:
    def add(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
        for key, value in fields.items():
            event.setdefault(key, value)
        return event

    return add


def configure_logging(
    *,
    level: str = "info",
    fmt: LogFormat = "auto",
    node: str | None = None,
    component: str = "agent",
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and route the stdlib loggers (kubernetes, urllib3) through it."""
    out = stream or sys.stdout
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
    renderer: Processor = (
        structlog.processors.JSONRenderer()
        if use_json
        else structlog.dev.ConsoleRenderer(colors=out.isatty())
    )
    numeric = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
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
                renderer,
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
