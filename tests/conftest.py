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


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse to run when ``--dist loadgroup`` is asked for and the groups did not take
    (a pytest and pytest-xdist pair that disagree on node ids ignores ``xdist_group``
    silently): tests that share the host's swap would then race on separate workers."""
    if not getattr(session.config.option, "loadgroup", False):  # set on xdist workers only
        return
    lost = [
        item.nodeid
        for item in session.items
        if item.get_closest_marker("xdist_group") and "@" not in item.nodeid
    ]
    if lost:
        raise pytest.UsageError(
            f"xdist_group marks not applied ({len(lost)} tests, e.g. {lost[0]}): this "
            "pytest-xdist cannot group with this pytest; install the versions pyproject.toml "
            "allows"
        )
