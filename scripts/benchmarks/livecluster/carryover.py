"""Scenarios a live run left out keep their figures from the previous results file (pure).

A full live run takes most of an hour per few scenarios, so ``--scenarios usage,reference``
reruns some; the results file is the benchmark's whole section of BENCHMARKS.md, though,
and must not lose the others. So before writing, the figures and tables of every scenario
this run did not run are copied from the previous file, each marked with the date of the run
that measured it (a figure carried twice keeps its first mark).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

MARK = "from the run of"


def scenario_of(key: str, names: Iterable[str]) -> str | None:
    """The scenario a figure key (``<scenario>_<measure>``) belongs to: the longest name
    that prefixes it."""
    found = [name for name in names if key.startswith(f"{name}_")]
    return max(found, key=len) if found else None


def _title_scenario(title: str, names: Iterable[str]) -> str | None:
    found = [name for name in names if title.startswith(f"{name}:")]
    return max(found, key=len) if found else None


def _titled(title: str, date: str) -> str:
    return title if MARK in title else f"{title} ({MARK} {date})"


def _marked(text: str, date: str) -> str:
    if MARK in text:
        return text
    mark = f"{MARK} {date}"
    return f"{text}; {mark}" if text else mark


def carried(
    previous: dict[str, Any] | None, ran: Collection[str], names: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The previous file's figures and tables of the scenarios in ``names`` not in ``ran``
    (figure dicts and table dicts as ``results`` writes them), and those scenarios in the
    order of ``names``."""
    if not previous:
        return [], [], []
    date = str(previous.get("date") or "an earlier run")
    kept = set(names) - set(ran)
    figures = [
        {**figure, "note": _marked(str(figure.get("note") or ""), date)}
        for figure in previous.get("figures") or []
        if scenario_of(str(figure.get("key", "")), names) in kept
    ]
    tables = [
        {**table, "title": _titled(str(table.get("title", "")), date)}
        for table in previous.get("tables") or []
        if _title_scenario(str(table.get("title", "")), names) in kept
    ]
    found = {scenario_of(str(f["key"]), names) for f in figures}
    return figures, tables, [name for name in names if name in found]
