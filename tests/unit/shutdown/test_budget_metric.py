"""The shutdown budget is exported, so the no-lock alert can tell "off" from "lost"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.shutdown.test_controller import build_controller


@pytest.mark.parametrize(
    "budget",
    [
        pytest.param(2, id="on"),
        pytest.param(0, id="off"),
    ],
)
def test_the_budget_gauge_is_the_sum_of_the_buckets(tmp_path: Path, budget: int) -> None:
    """``kubelet_companion_shutdown_budget_seconds`` is the configured budget from the
    start, 0 when graceful shutdown is off (when no lock is ever taken)."""
    controller = build_controller(tmp_path, budget=budget)
    (family,) = controller.metrics.budget.collect()
    assert family.name == "kubelet_companion_shutdown_budget_seconds"
    assert [sample.value for sample in family.samples] == [budget]
