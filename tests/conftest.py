"""Fixtures shared by every test: the harnesses live in ``tests/harness``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = [
    "tests.harness.logstate",
    "tests.harness.swapfile",
    "tests.harness.fake_apiserver.fixtures",
    "tests.harness.logind.fixtures",
    # Records every request the agent and the descheduler send, for the RBAC proof.
    "tests.harness.rbac.plugin",
]

SOAK = Path(__file__).resolve().parent / "soak"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The soak first: its 20 scenarios are the longest test by far, and run in parallel
    (pytest-xdist) it would otherwise start last and end the run alone."""
    items.sort(key=lambda item: not Path(str(item.path)).is_relative_to(SOAK))
