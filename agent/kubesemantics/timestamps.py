"""RFC 3339 timestamps, as the API server writes them (``metav1.Time`` and ``MicroTime``).

One formatter and one parser for every place that reads or writes API timestamps, state
files included.
"""

from __future__ import annotations

import datetime as dt
import re

_FRACTION = re.compile(r"\.(\d{1,6})\d*")


def rfc3339(unix_seconds: float, *, micros: bool = False) -> str:
    """``2026-11-22T09:42:45Z``; with ``micros``, ``2026-11-22T09:42:45.123456Z``."""
    moment = dt.datetime.fromtimestamp(unix_seconds, tz=dt.UTC)
    if micros:
        return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    """Unix seconds; Go's ``RFC3339Nano`` fractions past microseconds are cut.

    Raises ``ValueError`` for anything that is not an RFC 3339 time with a zone.
    """
    trimmed = _FRACTION.sub(lambda match: "." + match.group(1), text.strip())
    moment = dt.datetime.fromisoformat(trimmed)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no time zone")
    return moment.timestamp()
