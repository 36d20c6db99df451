"""Go-style booleans (``--flag=false``), because upstream's flags are Go's.

A Go program's boolean flag takes what ``strconv.ParseBool`` accepts; ours take the same, so
a flag copied from a Go tool's command line means the same here.
"""

from __future__ import annotations

TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})


def parse_bool(text: str) -> bool:
    """``strconv.ParseBool``: the value, or ``ValueError`` naming the problem."""
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ValueError(f"not a boolean: {text!r:.40} (true or false)")
