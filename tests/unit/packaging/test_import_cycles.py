"""No import circle in ``agent/``: the modules' imports, read from their source, form no cycle.

``lint-imports`` checks the layers between packages; a circle inside one package (two modules
importing each other, even only for type checking) passes it, and a reader still meets the
loop. So every import statement counts here: at the top, in a function, and under
``if TYPE_CHECKING:``. ``from package import name`` is an import of ``package.name`` when that
is a module, else of ``package``. A package's own ``__init__`` is reached by importing it by
name, never implicitly through a submodule (every package's submodules would otherwise form
a circle with an ``__init__`` that re-exports them).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.harness.repository import REPO

PACKAGE = "agent"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(path, root): path for path in sorted((root / PACKAGE).rglob("*.py"))}


def _imported(module: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of ``known`` that ``module`` (at ``path``) names in an import statement."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in known:  # ``import a.b.c``: the deepest one known
                    name = name.rpartition(".")[0]
                if name:
                    found.add(name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    found.add(target)
                elif base in known:
                    found.add(base)
    found.discard(module)
    return found


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Module -> the modules of ``agent`` it imports, for every module under ``root/agent``."""
    known = _modules(root)
    return {module: _imported(module, path, known) for module, path in known.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without
    recursion: the graph is a few hundred modules deep at most, but no limit is needed)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_agent_has_no_import_circle() -> None:
    """No set of modules in ``agent/`` imports itself round, counting every import statement
    (type-checking ones and those in functions too)."""
    assert cycles(import_graph()) == []


def test_a_circle_is_found_through_type_checking_and_relative_imports(tmp_path: Path) -> None:
    """The check sees a circle closed by an import under ``TYPE_CHECKING`` and a relative
    one, and names its modules; a chain without a way back is no circle."""
    package = tmp_path / PACKAGE / "pkg"
    package.mkdir(parents=True)
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (package / "__init__.py").write_text('"""Re-exports: no circle through the parent."""\n')
    (package / "first.py").write_text("from agent.pkg import second\n")
    (package / "second.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .third import Thing\n"
    )
    (package / "third.py").write_text("def f():\n    from agent.pkg.first import x\n")
    (package / "alone.py").write_text("import agent.pkg.first\n")
    graph = import_graph(tmp_path)
    assert cycles(graph) == [["agent.pkg.first", "agent.pkg.second", "agent.pkg.third"]]
    (package / "third.py").write_text("import agent.pkg\n")
    assert cycles(import_graph(tmp_path)) == []
