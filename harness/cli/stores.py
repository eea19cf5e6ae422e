"""``harness store check|repair``: the response stores under ``<run>/responses/``, checked or repaired in place
(``harness.outputs.store``); a repair holds the run folder's lock and keeps the original beside it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.parsing import add_command
from harness.errors import HarnessError
from harness.outputs.locking import OutputLock
from harness.outputs.store import repair, scan


def add_store(sub: Any) -> None:
    p = add_command(
        sub,
        "store",
        "check or repair response stores (the files under <run>/responses/)",
        ("harness store check runs/hf__smollm2-135m", "harness store repair runs/hf__smollm2-135m"),
    )
    p.add_argument("action", choices=("check", "repair"), help="check: list problems; repair: fix what can be fixed")
    p.add_argument("paths", nargs="+", help="store files, or run folders (every store under responses/)")
    p.set_defaults(handler=cmd_store)


def store_files(paths: list[str]) -> list[Path]:
    """The store files ``paths`` name: files as given, folders expanded to every store of their run(s)."""
    files: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = sorted((path / "responses").glob("*.jsonl")) + sorted(path.glob("*/responses/*.jsonl"))
            found = [f for f in found if not f.name.endswith(".rejected.jsonl")]
            if not found:
                raise HarnessError(f"{path}: no response stores (responses/*.jsonl) in this folder")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise HarnessError(f"{path}: not found")
    return files


def _check(path: Path) -> bool:
    """Print what is wrong with one store; whether it has problems."""
    found = scan(path)
    for problem in found.problems:
        fix = f" (repair: {problem.repair})" if problem.repair else " (not repairable without guessing)"
        print(f"{path}: line {problem.line}: {problem.message}{fix}")
    notes = []
    if found.duplicates:
        notes.append(f"{found.duplicates} identical duplicate records (harmless; repair drops them)")
    if found.partial_tail:
        notes.append("a partial last line from an interrupted write (dropped on the next run)")
    status = "problems" if found.problems else "ok"
    extra = f"; {'; '.join(notes)}" if notes else ""
    print(f"{status}: {path}: {len(found.records)} instances{extra}")
    return bool(found.problems)


def _repair(path: Path) -> None:
    with OutputLock(path.parent.parent):
        found, backup = repair(path)
    if backup is None:
        print(f"ok: {path}: nothing to repair")
    else:
        moved = f"{len(found.rejected)} conflicting records moved to {path.name}.rejected.jsonl"
        rejected = f", {moved}" if found.rejected else ""
        print(f"repaired: {path}: {len(found.records)} instances kept{rejected}; original kept as {backup}")


def cmd_store(args: argparse.Namespace) -> int:
    bad = 0
    for path in store_files(args.paths):
        if args.action == "check":
            bad += _check(path)
        else:
            _repair(path)
    return 2 if bad else 0
