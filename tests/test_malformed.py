"""Every malformed input ends in exit status 2 and one short line on stderr naming the culprit (the corpus in
``tests/malformed``): never a traceback, never a silent success, never a megabyte-long message.

Each case's files are written (and ``prepare`` run) under a temporary folder, the files it protects are
snapshotted, ``harness ARGS`` runs in-process, and then: status 2; stderr is exactly one line, ``error: ...``,
at most 500 characters, holding the case's ``expect``; the protected files are byte for byte what they were.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import tests.malformed
from tests.conftest import run_main
from tests.helpers import shared_data_dir
from tests.malformed.case import Case

MAX_LINE = 500


def all_cases() -> list[Case]:
    """The cases of every module of ``tests.malformed`` that has a ``CASES`` list, in module order."""
    cases: list[Case] = []
    for info in sorted(pkgutil.iter_modules(tests.malformed.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"tests.malformed.{info.name}")
        cases.extend(getattr(module, "CASES", []))
    return cases


CASES = all_cases()


def test_case_ids_are_unique() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_malformed_input_is_one_line(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case.set_up(tmp_path)
    protected = case.protected(tmp_path)
    assert not case.protect or protected, f"{case.id}: protect {case.protect} matches no file"
    argv = case.arguments(tmp_path, shared_data_dir())
    monkeypatch.chdir(tmp_path)  # a case that forgets --output-dir writes nothing into the checkout
    for name in ("HARNESS_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HARNESS_NO_PROGRESS"):
        monkeypatch.setenv(name, "1")  # no case may reach the network or draw a progress bar

    result = run_main(*argv, check=False)

    stderr = result.stderr.strip()
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2, f"exit status {result.returncode}; stderr: {stderr[-1000:]}"
    assert stderr.startswith("error: ") and "\n" not in stderr, f"not one 'error: ' line: {stderr[-1000:]!r}"
    assert len(stderr) <= MAX_LINE, f"{len(stderr)} characters: {stderr[:300]}..."
    assert case.expect in stderr, f"{case.expect!r} not in {stderr!r}"
    assert case.protected(tmp_path) == protected, "a protected file changed"
