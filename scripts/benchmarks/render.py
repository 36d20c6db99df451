"""BENCHMARKS.md from the benchmarks' JSON results and the notes that explain them.

Every figure in the file comes from a results file (``bench-results/<name>.json``, written by
the benchmark itself); the prose comes from ``notes/<name>.md`` beside this script, where a
line ``{figures}`` marks the place of the run's table. A benchmark without a full result
falls back to its ``--quick`` result (``bench-results/quick/``), labelled as such, and one
without any result says how to produce it. So rerunning one benchmark
(``scripts/bench --only NAME``) leaves every other figure, with its own date, in place.

Run: .venv/bin/python -m scripts.benchmarks.render [--results bench-results] [--out BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

NOTES = Path(__file__).resolve().parent / "notes"
ORDER = (
    "footprint",
    "startup",
    "shutdown",
    "swap",
    "readiness",
    "report",
    "kube_json",
    "descheduler",
    "growth",
    "live",
    "realnode",
    "testsuite",
)
PLACEHOLDER = "{figures}"
TITLES = {
    "footprint": "Agent footprint",
    "startup": "Start-up",
    "shutdown": "Graceful shutdown",
    "swap": "Swap audit",
    "readiness": "Readiness gate",
    "report": "NodeReport",
    "kube_json": "Raw JSON versus typed models",
    "descheduler": "Central descheduler",
    "growth": "Growth with hostile input",
    "live": "Live loop on a real control plane",
    "realnode": "Beside a real kubelet",
    "testsuite": "Test suite on a fresh clone",
}
"""Headings of benchmarks with no results yet (a result carries its own title)."""


def load_results(directory: Path) -> dict[str, dict[str, Any]]:
    """Each benchmark's latest results: the full run's, else the quick run's (marked)."""
    found: dict[str, dict[str, Any]] = {}
    for source, quick in ((directory / "quick", True), (directory, False)):
        for path in sorted(source.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            data["quick"] = quick
            found[data["benchmark"]] = data
    return found


def number(value: float) -> str:
    """Three significant figures, thousands separated, no exponent."""
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    if magnitude == 0:
        return "0"
    return f"{value:.3g}"


def quantity(value: float, unit: str) -> str:
    text = number(value)
    if not unit:
        return text
    return f"{text} {unit}" if unit[0].isalnum() else f"{text}{'' if unit == '%' else ' '}{unit}"


def target_text(figure: dict[str, Any]) -> str:
    target = figure.get("target")
    if not target:
        return "—"
    op = "≤" if target["op"] == "<=" else "≥"
    return f"{op} {quantity(target['limit'], figure['unit'])}"


def status_text(figure: dict[str, Any]) -> str:
    if figure["status"] == "missed":
        return f"**missed**: {figure['reason']}"
    return figure["status"] or "—"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_line(data: dict[str, Any]) -> str:
    m = data["machine"]
    load = data.get("load_average") or {}
    start = ", ".join(number(v) for v in load.get("start", [])) or "?"
    end = ", ".join(number(v) for v in load.get("end", [])) or "?"
    return (
        f"{m['cpus']} x {m['cpu_model']} ({m['arch']}), {number(m['memory_gib'])} GiB, "
        f"kernel {m['kernel']}, {m['python']}; load average (1, 5, 15 min) {start} at the "
        f"start, {end} at the end"
    )


def figures_table(data: dict[str, Any]) -> str:
    rows = []
    for f in data["figures"]:
        label = f["label"] + (f" ({f['note']})" if f.get("note") else "")
        spread = (
            f"{quantity(f['low'], f['unit'])} - {quantity(f['high'], f['unit'])}"
            if f["count"] > 1
            else "—"
        )
        rows.append(
            [
                label,
                quantity(f["value"], f["unit"]),
                spread,
                f"{f['count']} {f['over']}",
                target_text(f),
                status_text(f),
                f["baseline"] or "—",
            ]
        )
    return table(
        ["measure", "median", "min - max", "over", "target", "status", "baseline (same run)"],
        rows,
    )


def run_block(data: dict[str, Any]) -> str:
    kind = "quick run (cut-down settings, not the full figures)" if data["quick"] else "run"
    settings = ", ".join(f"{k} {v}" for k, v in data.get("settings", {}).items())
    lines = [
        f"**{kind.capitalize()} of {data['date']}** (`{_relative(data['command'])}`"
        + (f"; {settings}" if settings else "")
        + ").",
        f"Machine: {machine_line(data)}.",
        "",
        figures_table(data),
    ]
    for extra in data.get("tables") or []:
        lines += ["", f"{extra['title']}:", "", table(extra["columns"], extra["rows"])]
    return "\n".join(lines)


def _relative(command: str) -> str:
    return command.replace(f"{Path(__file__).resolve().parents[2]}/", "")


def notes_for(name: str) -> str:
    path = NOTES / f"{name}.md"
    return path.read_text(encoding="utf-8").strip() if path.exists() else ""


def section(name: str, data: dict[str, Any] | None) -> str:
    title = data["title"] if data else TITLES.get(name, name)
    heading = f"## {title} (`scripts/benchmarks/{name}.py`)"
    block = (
        run_block(data)
        if data
        else f"Not run yet: `scripts/bench --only {name}` writes `bench-results/{name}.json`."
    )
    notes = notes_for(name)
    if PLACEHOLDER in notes:
        body = notes.replace(PLACEHOLDER, block)
    else:
        body = "\n\n".join(part for part in (notes, block) if part)
    return f"{heading}\n\n{body}\n"


def summary(results: dict[str, dict[str, Any]]) -> str:
    rows = [
        [
            f"[{data['title']}](#{_anchor(data['title'], name)})",
            f["label"],
            quantity(f["value"], f["unit"]),
            target_text(f),
            status_text(f),
            data["date"] + (" (quick)" if data["quick"] else ""),
        ]
        for name, data in ((n, results[n]) for n in ORDER if n in results)
        for f in data["figures"]
        if f.get("target")
    ]
    return table(["benchmark", "measure", "median", "target", "status", "run"], rows)


def _anchor(title: str, name: str) -> str:
    text = f"{title} scripts/benchmarks/{name}.py".lower()
    return "".join(c for c in text.replace(" ", "-") if c.isalnum() or c in "-_")


def render(results: dict[str, dict[str, Any]]) -> str:
    names = [*ORDER, *sorted(set(results) - set(ORDER))]
    parts = [
        notes_for("intro").replace("{summary}", summary(results)),
        *(section(name, results.get(name)) for name in names),
    ]
    return "\n".join(part.rstrip() + "\n" for part in parts if part)


def main() -> int:
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=root / "bench-results")
    parser.add_argument("--out", type=Path, default=root / "BENCHMARKS.md")
    args = parser.parse_args()
    args.out.write_text(render(load_results(args.results)), encoding="utf-8")
    print(f"rendered {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
