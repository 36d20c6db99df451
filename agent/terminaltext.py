"""Text for a terminal: every value from outside is shown, never obeyed.

Names, namespaces, messages from the API server, label values, node names and file paths can
hold any character. Printed raw, an escape sequence clears the screen or recolours it, a
carriage return or a newline forges a line ("all NodeReports believed"), NUL and DEL hide what
follows, a bidi control (U+202E) shows the rest of the line reversed and a zero-width character
makes two names look alike. ``printable`` shows each such character as a backslash escape
instead, and escapes the backslash itself, so two different values never print the same.

What counts is ``str.isprintable``: every character in the Unicode categories Cc (C0, DEL,
C1), Cf (bidi and zero-width controls, the BOM), Zl and Zp (U+2028, U+2029), Zs other than the
space, Cs (lone surrogates), Co and Cn is escaped, like ``repr`` does it, without the quotes.

Each output stream has one place that applies it: ``render_lines`` for the text reports the
CLI prints (their tables aligned by ``agent.columns``) and the console log renderer in
``agent.telemetry.logs``. JSON needs none of it: ``json.dumps`` (its default ``ensure_ascii``)
writes every character outside printable ASCII, DEL, C1, U+2028 and bidi controls included,
as a ``\\u`` escape, so a ``--json`` document or a JSON log line keeps every value exact and
shows nothing a terminal acts on.
"""

from __future__ import annotations

from collections.abc import Iterable

_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if (named := _NAMED.get(char)) is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(value: str) -> str:
    """``value`` with every character a terminal would act on, and the backslash, escaped
    (``\\x1b``, ``\\n``, ``\\u202e``, ``\\\\``); the identity on ordinary text."""
    if value.isprintable() and "\\" not in value:
        return value  # the common case: one C-level scan, no copy
    return "".join(
        _escape(char) if char == "\\" or not char.isprintable() else char for char in value
    )


def render_lines(lines: Iterable[str]) -> str:
    """A text report as printed: each line escaped (a newline inside one is shown as
    ``\\n``, never started) and ended by a newline."""
    return "".join(f"{printable(line)}\n" for line in lines)
