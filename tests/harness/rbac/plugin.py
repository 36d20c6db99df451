"""Pytest hooks that let one test judge the RBAC of the whole integration suite.

The proof needs every request of the session before it runs, so the tests marked
``rbac_proof`` are moved to the end of the run, and the plugin notes whether the session
ran the whole integration suite (every test file under tests/integration collected, nothing
deselected): only then can "no request needed this permission" be concluded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness.fake_apiserver.requestlog import observe_every_server

from .recorder import SESSION

INTEGRATION = Path(__file__).resolve().parents[2] / "integration"
PROOF_DIR = INTEGRATION / "rbac"
MARKER = "rbac_proof"

_stop: list[Callable[[], None]] = []


def _is_integration(item: pytest.Item) -> bool:
    path = Path(str(item.path))
    return path.is_relative_to(INTEGRATION) and not path.is_relative_to(PROOF_DIR)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: judges the whole session's recorded requests; runs last"
    )
    _stop.append(observe_every_server(SESSION.observe))


def pytest_unconfigure() -> None:
    while _stop:
        _stop.pop()()


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        if _is_integration(item):
            SESSION.incomplete.append(f"deselected: {item.nodeid}")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the proof last; note which integration test files this session lacks."""
    proofs = [item for item in items if item.get_closest_marker(MARKER)]
    if proofs:
        others = [item for item in items if not item.get_closest_marker(MARKER)]
        items[:] = others + proofs
    collected = {Path(str(item.path)) for item in items if _is_integration(item)}
    on_disk = {
        path for path in INTEGRATION.rglob("test_*.py") if not path.is_relative_to(PROOF_DIR)
    }
    SESSION.incomplete += [
        f"not collected: {path.relative_to(INTEGRATION.parent.parent)}"
        for path in sorted(on_disk - collected)
    ]


def pytest_runtest_setup(item: pytest.Item) -> None:
    SESSION.current_test = item.nodeid


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome == "passed" or not report.nodeid.startswith("tests/integration/"):
        return
    if report.nodeid.startswith("tests/integration/rbac/"):
        return
    SESSION.not_passed.append(f"{report.outcome}: {report.nodeid}")
