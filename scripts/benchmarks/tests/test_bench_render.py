"""The benchmark results format and BENCHMARKS.md renderer, on sample results (no benchmark
runs here: benchmarks never run in CI; this pins how their figures are judged and shown)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.benchmarks import render, results


def _sample(benchmark: str = "footprint", **add: Any) -> dict[str, Any]:
    run = results.Results(benchmark, "Agent footprint", settings={"nodes": 1000})
    run.add(
        "rss",
        "steady RSS",
        [58.0, 59.0, 60.0],
        "MiB",
        over="1 s samples",
        target=("<=", 64.0),
        baseline="imports 55 MiB",
        why_missed="imports alone 55 MiB",
    )
    run.add(
        "cpu_churn",
        "CPU under churn",
        [0.4, 0.9, 1.2],
        "%",
        target=("<=", 0.5),
        baseline="idle 0.3 %",
        why_missed="swap audits on every pod event",
        **add,
    )
    run.tables.append({"title": "Watches", "columns": ["verb", "scope"], "rows": [["w", "n"]]})
    return run.to_json()


@pytest.mark.parametrize(
    ("samples", "target", "status"),
    [
        pytest.param([1.0, 2.0, 3.0], ("<=", 2.0), "met", id="median-at-an-upper-limit-meets"),
        pytest.param([1.0, 3.0, 3.0], ("<=", 2.0), "missed", id="median-above-an-upper-limit"),
        pytest.param([4.0, 5.0], (">=", 4.0), "met", id="lower-limit-met"),
        pytest.param([2.9, 3.9, 9.0], (">=", 4.0), "missed", id="median-below-a-lower-limit"),
        pytest.param([1.0], None, "", id="no-target-no-status"),
    ],
)
def test_status_is_computed_from_the_median_and_the_target(
    samples: list[float], target: tuple[str, float] | None, status: str
) -> None:
    """Whether a figure met its target is computed from its median, never typed by hand."""
    figure = results.Results("x", "X").add("k", "k", samples, "s", target=target, why_missed="why")
    assert figure.status == status
    assert (
        figure.reason.startswith("why; load average ") if status == "missed" else not figure.reason
    )


def test_a_missed_figure_without_a_reason_says_so() -> None:
    """A benchmark that forgets the reason of a miss is visible as such, not silent."""
    figure = results.Results("x", "X").add("k", "k", [3.0], "s", target=("<=", 1.0))
    assert figure.reason.startswith("the benchmark gave no reason")


def test_results_file_has_machine_load_and_figures(tmp_path: Path) -> None:
    """The JSON names the machine, the load average at start and end, and each figure's
    median, min, max and count."""
    path = tmp_path / "r" / "footprint.json"
    run = results.Results("footprint", "Agent footprint")
    run.add("rss", "RSS", [3.0, 1.0, 2.0], "MiB")
    run.write(path)
    data = json.loads(path.read_text())
    assert {"cpus", "cpu_model", "memory_gib", "kernel", "python"} <= data["machine"].keys()
    assert set(data["load_average"]) == {"start", "end"}
    figure = data["figures"][0]
    assert (figure["value"], figure["low"], figure["high"], figure["count"]) == (2.0, 1.0, 3.0, 3)
    assert not path.with_suffix(".json.partial").exists()


def test_rendered_file_shows_every_figure_its_target_and_misses() -> None:
    """BENCHMARKS.md shows each figure with its median, spread, target and status, a miss with
    its reason, the run's date and machine, the extra tables, and a summary of targets."""
    data = {**_sample(), "quick": False}
    text = render.render({"footprint": data})
    assert "| steady RSS | 59.0 MiB | 58.0 MiB - 60.0 MiB | 3 1 s samples | ≤ 64.0 MiB | met |" in (
        text
    )
    assert "**missed**: swap audits on every pod event" in text
    assert data["date"] in text
    assert f"{data['machine']['cpus']} x " in text
    assert "| w | n |" in text
    summary = text.split("## Every target", 1)[1].split("\n## ", 1)[0]
    assert "CPU under churn" in summary
    assert "steady RSS" in summary


def test_a_benchmark_without_results_says_how_to_run_it() -> None:
    """A benchmark never run shows the command that produces its figures, not stale numbers."""
    text = render.render({})
    assert "Not run yet: `scripts/bench --only swap`" in text


def test_full_results_win_over_quick_ones_and_quick_ones_are_labelled(tmp_path: Path) -> None:
    """A full run's file replaces the quick one; a quick-only benchmark is labelled quick."""
    (tmp_path / "quick").mkdir()
    full = _sample()
    quick = {**_sample("swap"), "title": "Swap audit"}
    (tmp_path / "footprint.json").write_text(json.dumps(full))
    (tmp_path / "quick" / "footprint.json").write_text(json.dumps({**full, "date": "old"}))
    (tmp_path / "quick" / "swap.json").write_text(json.dumps(quick))
    loaded = render.load_results(tmp_path)
    assert loaded["footprint"]["quick"] is False
    assert loaded["swap"]["quick"] is True
    text = render.render(loaded)
    assert "Quick run (cut-down settings, not the full figures)" in text
    assert "old" not in text.split("## Agent footprint", 1)[1].split("\n## ", 1)[0]
