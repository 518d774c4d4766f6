"""Imports run one way: no circle between the modules of `ssl_jax`, none between its rooms (each
sub-package one room, each top-level module its own), and nothing below the top modules imports
them. The graph is read from the source with `ast`: module-level and function-level imports,
`from a import b` counting as an import of `a.b` when `b` is a module. A package's `__init__` that a
deeper import runs implicitly is not an arrow (theirs hold no imports of the package).
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = "ssl_jax"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
# The top of the house, highest first: each may be imported only by those above it.
TOP = ("ssl_jax.main", "ssl_jax.train", "ssl_jax.validation", "ssl_jax.configs")
# The library, then the timing tools, then the studies: each imports only those before it.
STUDIES_ORDER = (PACKAGE, "benchmarks", "experiments")
# Leaves everything may import: they import nothing of the package.
LEAVES = (
    "ssl_jax.config_checks",
    "ssl_jax.methods.losses",
    "ssl_jax.parallel.sharding",
    "ssl_jax.data.color",
    "ssl_jax.data.sources.fashion_mnist",
    "ssl_jax.data.sources.source",
)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name → source file, for every `.py` file of the package."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imported(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> set[str]:
    """Modules of the package that one import statement names."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    if isinstance(node, ast.Import):
        return {m for m in (known(alias.name) for alias in node.names) if m}
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[: len(here) - node.level + 1]
        base = ".".join([*here, base] if base else here)
    out = set()
    for alias in node.names:
        name = f"{base}.{alias.name}"
        target = name if name in modules else known(base)
        if target:
            out.add(target)
    return out


@functools.cache
def import_graph(root: Path = ROOT, *more: Path) -> dict[str, set[str]]:
    """module → the package's modules it imports (anywhere in its source); with `more` packages,
    over all of them together."""
    modules = {}
    for package in (root, *more):
        modules |= _modules(package)
    graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets |= _imported(node, module, is_package, modules)
        graph[module] = targets - {module}
    return graph


def room(module: str) -> str:
    """`ssl_jax.data.host.augment` → `ssl_jax.data`; a top-level module is its own room."""
    parts = module.split(".")
    return ".".join(parts[:2]) if (ROOT.parent / Path(*parts[:2])).is_dir() else module


def rooms_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        out.setdefault(room(module), set()).update(room(t) for t in targets)
    return {r: targets - {r} for r, targets in out.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle (a path back to its start) per strongly connected group of 2+ nodes (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.add(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_path_back(min(group), group, graph) for group in groups]


def _path_back(start: str, group: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path start → … → start inside `group` (breadth first)."""
    parent: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        next_frontier = []
        for node in frontier:
            for nxt in sorted(graph[node] & group):
                if nxt == start:
                    path = [node]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if nxt not in parent:
                    parent[nxt] = node
                    next_frontier.append(nxt)
        frontier = next_frontier
    raise AssertionError(f"no circle through {start}")


def _describe(found: list[list[str]]) -> str:
    return "\n".join(" -> ".join(circle) for circle in found)


def test_no_circle_between_modules():
    graph = import_graph()
    found = circles(graph)
    assert not found, "imports that run in a circle:\n" + _describe(found)


def test_no_circle_between_rooms():
    graph = rooms_graph(import_graph())
    found = circles(graph)
    assert not found, "rooms (sub-packages) that import each other:\n" + _describe(found)


def test_top_modules_are_imported_only_from_above():
    graph = import_graph()
    wrong = [
        f"{module} imports {top}"
        for module, targets in sorted(graph.items())
        for k, top in enumerate(TOP)
        if top in targets and module not in TOP[:k]
    ]
    assert not wrong, f"imports that run back up (allowed only from above, {TOP}):\n" + "\n".join(
        wrong
    )


def test_leaves_import_nothing_of_the_package():
    graph = import_graph()
    for leaf in LEAVES:
        assert not graph[leaf], f"{leaf} imports {sorted(graph[leaf])}"


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """The checks can fail: a function-level back import, a relative one and `from a import b`
    (b a module) each close a circle that `circles` reports by name."""
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from ssl_jax import high\n")
    (package / "high.py").write_text("from ssl_jax.sub import leaf\n")
    (package / "sub" / "leaf.py").write_text("from .. import low\n")
    graph = import_graph(package)
    assert graph["ssl_jax.low"] == {"ssl_jax.high"}
    assert graph["ssl_jax.high"] == {"ssl_jax.sub.leaf"}
    assert graph["ssl_jax.sub.leaf"] == {"ssl_jax.low"}
    assert circles(graph) == [["ssl_jax.high", "ssl_jax.sub.leaf", "ssl_jax.low", "ssl_jax.high"]]


def test_the_studies_import_one_way():
    """`experiments` and `benchmarks`, packages beside `ssl_jax`: no circle among their modules, and
    each package imports only those before it in `STUDIES_ORDER` (the studies use the timing tools
    and the library, never the other way round)."""
    graph = import_graph(ROOT, *(ROOT.parent / name for name in STUDIES_ORDER[1:]))
    found = circles(graph)
    assert not found, "imports that run in a circle:\n" + _describe(found)
    rank = {name: k for k, name in enumerate(STUDIES_ORDER)}
    wrong = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if rank[target.split(".")[0]] > rank[module.split(".")[0]]
    ]
    assert not wrong, f"imports that run back (order {STUDIES_ORDER}):\n" + "\n".join(wrong)


def test_configs_imports_no_jax():
    """Building a config stays light: `import ssl_jax.configs` loads neither JAX nor TensorFlow."""
    code = (
        "import sys, ssl_jax.configs; "
        "print(sorted(m for m in ('jax', 'tensorflow', 'flax') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_design_draws_the_seam():
    """docs/design.md's table of the loop's seam lists, for each of its modules, exactly the
    modules of the table that it imports (so the picture is the code's, and stays so)."""
    text = (ROOT.parent / "docs" / "design.md").read_text()
    start = text.index("| module | its one job |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[f"{PACKAGE}.{cells[0].strip('`')}"] = {
            f"{PACKAGE}.{name.strip(' `')}" for name in cells[2].split(",") if name.strip()
        }
    graph = import_graph()
    assert set(rows) <= set(graph), sorted(set(rows) - set(graph))
    drawn_wrong = {
        module: (sorted(drawn), sorted(graph[module] & set(rows)))
        for module, drawn in rows.items()
        if drawn != graph[module] & set(rows)
    }
    assert not drawn_wrong, f"module: (drawn, imported): {drawn_wrong}"
