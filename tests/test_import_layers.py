"""The core reads as layers: the import graph of ``harness/`` has no circle, and no module imports a later layer.

Why a test: an import circle makes the layering impossible to see and is how a module that should be vocabulary
ends up importing the registry. Every import counts, including those inside functions and under
``TYPE_CHECKING``. The layers are the ones ``docs/architecture.md`` lists.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 450

#: The first dotted prefix that matches names a module's layer; anything unlisted is vocabulary (layer 1).
LAYERS: dict[str, int] = {
    "harness.downloads": 1,
    "harness.data_sets": 1,
    "harness.sentence_encoders": 1,
    "harness.kinds": 2,
    "harness.hookspecs": 3,
    "harness.registry": 3,
    "harness.task_validation": 3,
    "harness.task_loading": 3,
    "harness.api": 3,
    "harness.api_reference": 3,
    "harness.store": 4,
    "harness.run_dir": 4,
    "harness.results": 4,
    "harness.task_run": 4,
    "harness.executors": 4,
    "harness.runner": 5,
    "harness.run_options": 5,
    "harness.run_checks": 5,
    "harness.task_data": 5,
    "harness.run_scoring": 5,
    "harness.rescoring": 5,
    "harness.sweep": 5,
    "harness.importing": 5,
    "harness.cli": 6,
    "harness.leaderboard": 6,
    "harness.exports": 6,
    "harness.analyses": 6,
    "harness.collect": 6,
    "harness.__main__": 6,
    # The built-in plugins: registered by name (``harness.registry.BUILTIN_PLUGINS``), imported by no core module.
    "harness.plugins": 7,
    "harness.scorers": 7,
    "harness.tasks": 7,
}


def _modules(*roots: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def import_graph(*roots: str) -> dict[str, set[str]]:
    """Module -> the modules of ``roots`` it imports (any import statement anywhere in it)."""
    modules = _modules(*roots)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
                ]
            for target in targets:
                found = owner(target)
                if found and found != module:
                    graph[module].add(found)
        graph.setdefault(module, set())
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> int:
    for prefix, number in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return number
    return 1


def test_circles_are_found_on_a_small_graph() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_core_and_the_plugins_have_no_import_circle() -> None:
    assert circles(import_graph("harness")) == []


def test_no_core_module_imports_a_later_layer() -> None:
    graph = import_graph("harness")
    upward = sorted(
        f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for module, targets in graph.items()
        for target in targets
        if layer(target) > layer(module) and not target.startswith(module + ".")
    )
    assert upward == []


def test_no_module_is_over_the_size_limit() -> None:
    long = sorted(
        f"{path.relative_to(REPO)}: {n} lines"
        for path in (REPO / "harness").rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    )
    assert long == []
