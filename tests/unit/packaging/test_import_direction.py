"""The scripts import the product and the test harness; the tests never import the scripts
(one direction, and no ``sys.path`` edits on either side)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.harness.repository import REPO


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_no_test_imports_a_script() -> None:
    """No module under ``tests/`` imports anything under ``scripts``."""
    offenders = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "tests").rglob("*.py"))
        if any(name == "scripts" or name.startswith("scripts.") for name in _imports(path))
    ]
    assert offenders == []


def test_no_module_edits_sys_path() -> None:
    """Neither the tests nor the scripts put directories on ``sys.path`` by hand: the
    scripts run as modules from the repository (``python -m scripts...``)."""
    edits = ("sys.path." + "insert", "sys.path." + "append")  # spelled apart: not this file
    offenders = [
        str(path.relative_to(REPO))
        for top in ("tests", "scripts")
        for path in sorted((REPO / top).rglob("*.py"))
        if any(edit in path.read_text(encoding="utf-8") for edit in edits)
    ]
    assert offenders == []
