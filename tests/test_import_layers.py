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

#: The layer of every entry at the root of ``harness/``: a module, or a folder with everything in it. The folders are
#: the layers' names (``data``, ``words``, ``scoring``, ``registry``, ``outputs``, ``run``, ...), so a module's folder
#: says its layer; an entry missing here fails ``test_every_root_entry_has_a_layer``: nothing defaults silently.
LAYERS: dict[str, int] = {
    # 1. vocabulary: the interfaces, the word rules, options, files and data
    "harness": 1,
    "errors": 1,
    "options": 1,
    "files": 1,
    "extras": 1,
    "instances": 1,
    "models": 1,
    "decoding": 1,
    "progress": 1,
    "seeding": 1,
    "usage": 1,
    "task_config": 1,
    "data": 1,
    "words": 1,
    "scoring": 1,
    "prompts": 1,
    "requests": 1,
    # 2. request kinds
    "kinds": 2,
    # 3. plugins, the registry, the public API, and what a run writes (the API exports the response store)
    "hookspecs": 3,
    "registry": 3,
    "api": 3,
    "api_reference": 3,
    "outputs": 3,
    # 4. who answers a run's requests
    "executors": 4,
    # 5. a run
    "run": 5,
    # 6. the commands, and what only they read
    "cli": 6,
    "__main__": 6,
    "leaderboard": 6,
    "exports": 6,
    "analyses": 6,
    "collect": 6,
    # 7. the built-ins, registered by name (``harness.registry.manager.BUILTIN_PLUGINS``), imported by no core module
    "plugins": 7,
    "scorers": 7,
    "tasks": 7,
}
#: At most this many modules at the root of ``harness/``: the rest lives in the folders above.
MAX_ROOT_MODULES = 20


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
    """A module's layer: that of its entry at the root of ``harness/`` (``harness.run.runner`` is in ``run``)."""
    parts = module.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else parts[0]]


def root_entries() -> set[str]:
    """The modules and packages at the root of ``harness/``, as ``LAYERS`` names them."""
    root = REPO / "harness"
    modules = {p.stem for p in root.glob("*.py") if p.stem != "__init__"}
    folders = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return modules | folders | {"harness", "tasks"}


def test_every_root_entry_has_a_layer() -> None:
    entries = root_entries()
    assert sorted(entries - set(LAYERS)) == []
    assert sorted(set(LAYERS) - entries) == []


def test_the_root_keeps_few_modules() -> None:
    modules = sorted(p.name for p in (REPO / "harness").glob("*.py"))
    assert len(modules) <= MAX_ROOT_MODULES, modules


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
