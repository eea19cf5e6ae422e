"""The built-in plugins and scorers go through the front door: they import ``harness.api`` and nothing else of the
core, so that a plugin author who copies one as a template depends only on what ``harness.api`` promises.

A built-in may import another built-in (``harness.plugins``, ``harness.scorers``, ``harness.tasks``) and the few
core modules of ``ALLOWED``, each with the reason it is not in the public API.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILT_INS = ("harness.plugins", "harness.scorers", "harness.tasks")

#: (importing built-in, imported core module) -> why. Both are dotted prefixes.
ALLOWED: dict[tuple[str, str], str] = {
    ("harness.plugins.builtin", "harness.kinds"): (
        "the built-in request kinds are registered through the same hook as a plugin's kinds, from the core's list; "
        "a plugin adds its own kind by subclassing harness.api.RequestKind"
    ),
    ("harness.plugins.loaders.downloads", "harness.data.downloads"): (
        "the built-in data sets are fetched by the machinery of `harness data fetch` (atomic, bounded, mirrors); a "
        "plugin's data set declares harness.api.DataSet files and `harness data` fetches them"
    ),
    ("harness.plugins.loaders.generic", "harness.data.tables"): (
        "the generic loaders read a user's file through the one table reader that `harness data inspect` also "
        "uses, so that a task file it writes reads the data exactly as inspected"
    ),
}


def _module_name(path: Path, repo: Path) -> str:
    parts = list(path.relative_to(repo).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def core_imports(repo: Path = REPO) -> dict[str, set[str]]:
    """Each built-in module -> the core modules it imports (anywhere in it, at any depth)."""
    found: dict[str, set[str]] = {}
    for root in ("plugins", "scorers", "tasks"):
        for path in sorted((repo / "harness" / root).rglob("*.py")):
            module = _module_name(path, repo)
            targets = found.setdefault(module, set())
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                elif isinstance(node, ast.ImportFrom):
                    raise AssertionError(f"{module}: relative import at line {node.lineno}")
                targets.update(n for n in names if _under(n, "harness") and not any(_under(n, b) for b in BUILT_INS))
    return found


def internal_imports(repo: Path = REPO) -> list[str]:
    """``MODULE imports TARGET`` for every core module a built-in imports besides the API and ``ALLOWED``."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in core_imports(repo).items()
        for target in targets
        if target != "harness.api" and not any(_under(module, who) and _under(target, what) for who, what in ALLOWED)
    )


def test_built_ins_import_only_the_public_api() -> None:
    assert internal_imports() == []


def test_every_allowed_entry_is_still_needed() -> None:
    used = {
        (who, what)
        for module, targets in core_imports().items()
        for target in targets
        for who, what in ALLOWED
        if _under(module, who) and _under(target, what)
    }
    assert sorted(set(ALLOWED) - used) == []


def test_the_check_sees_an_internal_import_anywhere(tmp_path: Path) -> None:
    scorer = tmp_path / "harness" / "scorers" / "mine.py"
    scorer.parent.mkdir(parents=True)
    scorer.write_text(
        "from harness.api import Metric\n"
        "from harness.scorers.top1 import Top1\n"
        "def f():\n"
        "    import harness.run.runner\n"
        "    from harness.data.tables.cells import is_empty\n",
        encoding="utf-8",
    )
    assert internal_imports(tmp_path) == [
        "harness.scorers.mine imports harness.data.tables.cells",
        "harness.scorers.mine imports harness.run.runner",
    ]
