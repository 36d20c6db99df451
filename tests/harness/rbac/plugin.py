"""Pytest hooks that let one test judge the RBAC of the whole integration suite.

The proof needs every request of the session before it runs, so the tests marked
``rbac_proof`` are moved to the end of the run, and the plugin notes whether the session
ran the whole integration suite (every test file under tests/integration collected, nothing
deselected): only then can "no request needed this permission" be concluded.

Run in parallel (pytest-xdist), each worker records only the requests of its own tests. So
every worker writes its record to a directory the controller hands out (after each test, as
one atomic file), with how many of the session's other tests it has finished; a proof test
waits until the workers together have finished all of them (a positive signal, polled), and
judges the union (``recorded``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.harness.fake_apiserver.requestlog import observe_every_server
from tests.harness.waiting import wait_until_blocking

from .recorder import COMPONENTS, SESSION, SessionRequests
from .requestinfo import RequestAttributes

INTEGRATION = Path(__file__).resolve().parents[2] / "integration"
PROOF_DIR = INTEGRATION / "rbac"
MARKER = "rbac_proof"
RECORD_DIR = "rbac_record_dir"
"""The ``workerinput`` key naming the directory the workers write their records to."""
WAIT_SECONDS = 1200.0
"""How long a proof waits for the other workers' tests (bounds a crashed worker's hang)."""

_stop: list[Callable[[], None]] = []
_state: dict[str, Any] = {
    "record_dir": None,
    "worker": "",
    "others": 0,
    "finished": 0,
    "proofs": frozenset(),
    "controller_dir": None,
}


def _is_integration(item: pytest.Item) -> bool:
    path = Path(str(item.path))
    return path.is_relative_to(INTEGRATION) and not path.is_relative_to(PROOF_DIR)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: judges the whole session's recorded requests; runs last"
    )
    _stop.append(observe_every_server(SESSION.observe))
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None and worker_input.get(RECORD_DIR):
        _state["record_dir"] = Path(worker_input[RECORD_DIR])
        _state["worker"] = str(worker_input.get("workerid", "w"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """On the xdist controller: one record directory for the whole session's workers."""
    if _state.get("controller_dir") is None:
        _state["controller_dir"] = tempfile.mkdtemp(prefix="kc-rbac-record-")
    node.workerinput[RECORD_DIR] = _state["controller_dir"]


def pytest_unconfigure() -> None:
    while _stop:
        _stop.pop()()
    if _state["controller_dir"] is not None:
        shutil.rmtree(_state["controller_dir"], ignore_errors=True)


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        if _is_integration(item):
            SESSION.incomplete.append(f"deselected: {item.nodeid}")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the proof last; note which integration test files this session lacks."""
    proofs = [item for item in items if item.get_closest_marker(MARKER)]
    others = [item for item in items if not item.get_closest_marker(MARKER)]
    if proofs:
        items[:] = others + proofs
    _state["others"] = len(others)
    _state["proofs"] = frozenset(item.nodeid for item in proofs)
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


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    """A worker's record, written after each of its tests (the proof reads them all)."""
    directory = _state["record_dir"]
    if directory is None or nodeid in _state["proofs"]:
        return
    _state["finished"] += 1
    record = {
        "finished": _state["finished"],
        "others": _state["others"],
        "incomplete": SESSION.incomplete,
        "not_passed": SESSION.not_passed,
        "sent": {
            component: [
                [list(_fields(attributes)), test]
                for attributes, test in SESSION.requests(component).items()
            ]
            for component in COMPONENTS
        },
    }
    final = directory / f"{_state['worker']}.json"
    partial = directory / f".{_state['worker']}.json.part"
    partial.write_text(json.dumps(record))
    partial.replace(final)


def _fields(attributes: RequestAttributes) -> tuple[Any, ...]:
    return tuple(getattr(attributes, name) for name in RequestAttributes.__dataclass_fields__)


def recorded() -> SessionRequests:
    """The session's requests: this process's, or, under xdist, every worker's once all of
    the session's other tests have finished."""
    directory = _state["record_dir"]
    if directory is None:
        return SESSION

    def read() -> list[dict[str, Any]]:
        return [json.loads(path.read_text()) for path in directory.glob("*.json")]

    def finished() -> int:
        return sum(record["finished"] for record in read())

    wait_until_blocking(
        lambda: finished() >= _state["others"],
        lambda: f"the workers' {_state['others']} tests, {finished()} finished (did one crash?)",
        WAIT_SECONDS,
        interval=0.2,
    )
    records = read()
    union = SessionRequests()
    for record in records:
        for component, entries in record["sent"].items():
            for fields, test in entries:
                union.sent[component].setdefault(RequestAttributes(*fields), test)
        union.not_passed += record["not_passed"]
    union.incomplete = list(records[0]["incomplete"]) if records else list(SESSION.incomplete)
    return union
