"""The package's import graph has no cycles (bar a commented list of known, deferred ones).

Every module of every package in ``pyproject.toml`` (``graph/``, ``tools/`` and ``prompts/`` ship
as ``envharness.graph`` ...) is parsed with :mod:`ast`; each ``import`` or ``from ... import`` of an
``envharness`` module becomes an edge to the module it loads (``from envharness.x import y`` is an
edge to ``envharness.x.y`` when that is a module, else to ``envharness.x``). Imports under ``if
TYPE_CHECKING:`` never run and are left out. Imports inside functions are *deferred*: they run
only when the function is called, so they cannot fail an import, but a cycle through them still
ties the layers together.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Cycles closed by a deferred import (inside a function), one import per cycle: none today, and
# nothing may be added. A new cycle is a layering mistake (issue 16, item 6): move the import, or
# the shared code to a lower module. The mechanism stays so that the test keeps failing on a stale
# entry.
KNOWN_DEFERRED_CYCLES: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` loads ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int
    deferred: bool

    def __str__(self) -> str:
        where = "inside a function" if self.deferred else "at module level"
        return f"{self.source} -> {self.target} ({self.path}:{self.line}, {where})"


def _modules() -> dict[str, Path]:
    """Every module the wheel installs, by dotted name."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots: dict[str, str] = setuptools["package-dir"]
    modules: dict[str, Path] = {}
    for package in setuptools["packages"]:
        base = max((r for r in roots if package == r or package.startswith(r + ".")), key=len)
        rest = package[len(base) :].lstrip(".")
        folder = ROOT / roots[base] / Path(*rest.split(".")) if rest else ROOT / roots[base]
        for path in sorted(folder.glob("*.py")):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that can run, with whether it sits inside a function."""
    stack: list[tuple[ast.AST, bool]] = [(node, False) for node in tree.body]
    while stack:
        node, deferred = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend((child, deferred) for child in node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, deferred
            continue
        inside = deferred or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        stack.extend((child, inside) for child in ast.iter_child_nodes(node))


def _targets(node: ast.Import | ast.ImportFrom, module: str, path: Path, known) -> list[str]:
    """The modules an import statement loads, by dotted name."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module if path.stem == "__init__" else module.rpartition(".")[0]
        parts = package.split(".")
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, node.module] if node.module else parts)
    else:
        base = node.module or ""
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
    ]


def import_graph() -> dict[str, list[Edge]]:
    """Each module's imports of other ``envharness`` modules."""
    modules = _modules()
    graph: dict[str, list[Edge]] = {name: [] for name in modules}
    for module, path in modules.items():
        relative = path.relative_to(ROOT).as_posix()
        for node, deferred in _imports(ast.parse(path.read_text(), filename=relative)):
            for target in _targets(node, module, path, modules):
                while target and target not in modules:  # an attribute, or outside the package
                    target = target.rpartition(".")[0]
                if target and target != module:
                    graph[module].append(Edge(module, target, relative, node.lineno, deferred))
    return graph


def find_cycle(graph: dict[str, list[Edge]]) -> list[Edge] | None:
    """One cycle of the graph as its edges, or ``None`` if it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[Edge] = []

    def visit(module: str) -> list[Edge] | None:
        state[module] = 1
        for edge in graph[module]:
            if state.get(edge.target) == 1:
                start = next(i for i, e in enumerate(path) if e.source == edge.target)
                return [*path[start:], edge] if path[start:] else [edge]
            if edge.target not in state:
                path.append(edge)
                found = visit(edge.target)
                if found:
                    return found
                path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def _reaches(graph: dict[str, list[Edge]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for edge in graph[todo.pop()]:
            if edge.target == goal:
                return True
            if edge.target not in seen:
                seen.add(edge.target)
                todo.append(edge.target)
    return False


def _describe(cycle: list[Edge]) -> str:
    return "\n  ".join(str(edge) for edge in cycle)


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Edge]]:
    return import_graph()


def test_the_graph_covers_every_package_and_resolves_imports(graph):
    assert {"envharness", "envharness.core", "envharness.graph.rigger", "envharness.tools"} <= set(
        graph
    )
    assert not any("/tasks/" in edge.path for edges in graph.values() for edge in edges)
    targets = {(e.target, e.deferred) for e in graph["envharness.rollout.executors"]}
    assert ("envharness.rollout.jobs", False) in targets  # from envharness.rollout.jobs import
    spec = {e.target for e in graph["envharness.harness.spec"] if not e.deferred}
    assert "envharness.core" in spec and "envharness.harness.base" not in spec  # TYPE_CHECKING


def test_module_level_imports_have_no_cycle(graph):
    eager = {module: [e for e in edges if not e.deferred] for module, edges in graph.items()}
    cycle = find_cycle(eager)
    assert cycle is None, f"an import cycle at module level:\n  {_describe(cycle)}"


def test_deferred_imports_close_only_the_known_cycles(graph):
    allowed = {
        module: [e for e in edges if (e.source, e.target) not in KNOWN_DEFERRED_CYCLES]
        for module, edges in graph.items()
    }
    cycle = find_cycle(allowed)
    assert cycle is None, (
        "a new import cycle (move the import, or the shared code to a lower module; do not add "
        f"it to KNOWN_DEFERRED_CYCLES):\n  {_describe(cycle)}"
    )


def test_every_known_cycle_still_exists(graph):
    for source, target in sorted(KNOWN_DEFERRED_CYCLES):
        edges = [e for e in graph[source] if e.target == target]
        assert edges, f"{source} no longer imports {target}: remove it from KNOWN_DEFERRED_CYCLES"
        assert all(e.deferred for e in edges), f"{source} imports {target} at module level"
        assert _reaches(graph, target, source), (
            f"{source} -> {target} no longer closes a cycle: remove it from KNOWN_DEFERRED_CYCLES"
        )


def test_the_core_contract_sits_at_the_bottom(graph):
    below = {"envharness.errors", "envharness.schema"}
    assert {e.target for e in graph["envharness.core"]} <= below, (
        "envharness.core may import only the errors and the schema checks"
    )
    # a spec describes a stack without knowing the component base (which saves a stack as a spec)
    assert not any(e.target == "envharness.harness.base" for e in graph["envharness.harness.spec"])


def test_find_cycle_names_the_cycle():
    def edge(source: str, target: str) -> Edge:
        return Edge(source, target, f"{source}.py", 1, False)

    graph = {"a": [edge("a", "b")], "b": [edge("b", "c")], "c": [edge("c", "a")], "d": []}
    cycle = find_cycle(graph)
    assert cycle is not None and [(e.source, e.target) for e in cycle] == [
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
    ]
    assert "a -> b (a.py:1, at module level)" in _describe(cycle)
    assert find_cycle({"a": [edge("a", "b")], "b": []}) is None
