"""Run every case of the malformed-input corpus (``tests/malformed``) through the CLI of this checkout and count
what happened: ok (exit 2, one short line naming the culprit, protected files unchanged), a traceback, a silent
success, more than one line, a line too long, the culprit not named, damaged outputs.

Why: the corpus test says pass or fail; this says how a checkout fails, e.g. before and after a change. To measure
an older commit, copy ``tests/malformed``, ``tests/test_malformed.py``, ``tests/conftest.py`` and
``tests/helpers.py`` into a worktree of it and run ``python scripts/classify_malformed.py`` from its root.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import io
import os
import pkgutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.getcwd())
os.environ.setdefault("HARNESS_NO_PROGRESS", "1")

import tests.malformed  # noqa: E402
from harness.cli import main  # noqa: E402
from tests.helpers import shared_data_dir  # noqa: E402
from tests.malformed.case import Case  # noqa: E402
from tests.test_malformed import CASES, MAX_LINE  # noqa: E402


def _module_of_cases() -> dict[str, str]:
    owners: dict[str, str] = {}
    for info in pkgutil.iter_modules(tests.malformed.__path__):
        module = importlib.import_module(f"tests.malformed.{info.name}")
        for case in getattr(module, "CASES", []):
            owners[case.id] = info.name
    return owners


def classify(case: Case) -> str:
    tmp = Path(tempfile.mkdtemp())
    try:
        case.set_up(tmp)
    except Exception:
        return "setup failed (the case needs files the checkout does not write)"
    protected = case.protected(tmp)
    argv = case.arguments(tmp, shared_data_dir())
    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    except Exception:
        return "traceback"
    finally:
        os.chdir(cwd)
    line = err.getvalue().strip()
    if code == 0:
        return "silent success (exit 0)"
    if code != 2:
        return f"exit {code}"
    if "\n" in line or not line.startswith("error: "):
        return "not one line"
    if len(line) > MAX_LINE:
        return "line too long"
    if case.expect not in line:
        return "culprit not named"
    if case.protected(tmp) != protected:
        return "damaged outputs"
    return "ok"


def main_script() -> None:
    owners = _module_of_cases()
    total: collections.Counter[str] = collections.Counter()
    by_module: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for case in CASES:
        kind = classify(case)
        total[kind] += 1
        by_module[owners.get(case.id, "?")][kind] += 1
    print(f"all {len(CASES)}: {dict(total)}")
    for module, counts in sorted(by_module.items()):
        print(f"{module} {sum(counts.values())}: {dict(counts)}")


if __name__ == "__main__":
    main_script()
