"""``agent.terminaltext`` and ``agent.columns``: outside values shown, never obeyed, never
confused with one another."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.columns import aligned
from agent.terminaltext import printable, render_lines

ANY_CHARACTER = st.characters(codec=None, categories=None, exclude_categories=())
"""Every code point, lone surrogates and unassigned ones included."""
ANY_TEXT = st.text(ANY_CHARACTER)
HOSTILE = "evil\x1b[2J\r\nall NodeReports believed\x00\u202etxt.exe\u200b\x7f\x9b\u2028\\"


def unescape(shown: str) -> str:
    """The inverse of ``printable`` (its escapes are Python's own)."""
    return shown.encode("latin-1", "backslashreplace").decode("unicode_escape")


def is_control(char: str) -> bool:
    """A character a terminal may act on rather than show: C0, DEL, C1, format controls
    (bidi, zero-width), line and paragraph separators, lone surrogates."""
    return unicodedata.category(char) in {"Cc", "Cf", "Cs", "Zl", "Zp"}


@given(ANY_TEXT)
def test_printable_output_has_no_control_character(value: str) -> None:
    """Whatever a name holds, what is printed of it is printable, one line."""
    shown = printable(value)
    assert shown.isprintable()
    assert not any(is_control(char) for char in shown)


@given(ANY_TEXT)
def test_printable_is_injective(value: str) -> None:
    """Each escaped form decodes back to the one value it came from, so two different
    names never print the same (a literal backslash is escaped too)."""
    assert unescape(printable(value)) == value


@given(ANY_TEXT)
def test_a_name_spelled_as_an_escape_prints_differently(value: str) -> None:
    """A name written out as another name's escaped form (``evil\\x1b`` typed with a real
    backslash) never prints like that other name."""
    spelled = printable(value)
    if spelled != value:
        assert printable(spelled) != printable(value)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param("\x1b[2J", "\\x1b[2J", id="escape-sequence"),
        pytest.param("a\nb\rc\td", "a\\nb\\rc\\td", id="newline-return-tab"),
        pytest.param("a\x00b", "a\\x00b", id="nul"),
        pytest.param("a\x7fb\x9bc", "a\\x7fb\\x9bc", id="del-and-c1"),
        pytest.param("\u202etxt.exe", "\\u202etxt.exe", id="right-to-left-override"),
        pytest.param("pay\u200bpal\ufeff", "pay\\u200bpal\\ufeff", id="zero-width"),
        pytest.param("a\u2028b", "a\\u2028b", id="line-separator"),
        pytest.param("a\\nb", "a\\\\nb", id="literal-backslash"),
        pytest.param("\ud800", "\\ud800", id="lone-surrogate"),
    ],
)
def test_each_kind_of_control_is_shown_escaped(value: str, shown: str) -> None:
    """Escapes look like Python's, so ``\\x1b`` reads as what it is."""
    assert printable(value) == shown


@pytest.mark.parametrize(
    "value", ["web-7d4b9c-x2x9q", "kube-system/coredns", "nœud-é", "节点", "a b", "🙂"]
)
def test_ordinary_names_are_unchanged(value: str) -> None:
    """Names, spaces and non-ASCII letters print as they are."""
    assert printable(value) == value


def test_render_lines_keeps_one_line_per_line() -> None:
    """A newline inside a line is shown, never started: the report keeps its line count."""
    text = render_lines(["first", f"pod {HOSTILE} evicted", "last"])
    assert text.splitlines() == ["first", f"pod {printable(HOSTILE)} evicted", "last"]
    assert text.endswith("\n")
    assert not any(is_control(char) for char in text.replace("\n", ""))


def test_columns_line_up_with_escaped_cells() -> None:
    """Cells are padded to their escaped width, so every column starts at the same place
    once the lines are printed."""
    rows = [("POD", "NODE"), (HOSTILE, "n1"), ("web", "n2")]
    lines = render_lines(aligned(rows)).splitlines()
    starts = {line.index(node) for line, node in zip(lines, ("NODE", "n1", "n2"), strict=True)}
    assert starts == {len(printable(HOSTILE)) + 2}
    assert lines[1].startswith(printable(HOSTILE))


def test_columns_keep_a_trailing_newline_of_the_last_cell() -> None:
    """Only padding is trimmed: a last cell ending in a newline still shows it."""
    (line,) = aligned([("a", "b\n")])
    assert render_lines([line]) == "a  b\\n\n"
