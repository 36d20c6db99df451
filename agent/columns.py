"""Aligned text columns, for the reports the CLI prints (``shutdown plan``, ``swap report``).

Cells are left as they are and padded to the width they have once escaped: the report's lines
go through ``agent.terminaltext.render_lines``, which escapes each one whole, so a hostile
name is shown as ``\\x1b[2J`` and the columns still line up.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.terminaltext import printable


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """One line per row, each column padded to its widest cell, two spaces apart."""
    if not rows:
        return []
    shown = [[len(printable(cell)) for cell in row] for row in rows]
    widths = [max(row[column] for row in shown) for column in range(len(rows[0]))]
    return [
        "  ".join(
            cell + " " * (width - length)
            for cell, length, width in zip(row, lengths, widths, strict=True)
        ).rstrip(" ")  # only the padding: a cell's own trailing "\n" is shown escaped
        for row, lengths in zip(rows, shown, strict=True)
    ]
