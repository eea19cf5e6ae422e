"""The fixed set of runs whose outputs must not change when the code is reorganised, and how to compare them.

Why: a refactoring of the runner, the request kinds or an adapter must leave every number the harness writes
byte-identical. ``snapshot(model, root)`` runs the same commands every time (Provo and provo-paper with
``--limit 32``, asset-valid and dailydialog-pp with ``--limit 8`` and two decoders, pragmatics-mcq with
``--limit 5``, the human-only runs of the same tasks, ``harness score`` of the Provo run with one scorer removed
and a scorer argument changed, and the leaderboard of them all) and returns every output file with its volatile
keys (date, timing) removed.

The fast test (``tests/test_snapshot.py``) runs it on the mock adapter against
``tests/fixtures/snapshot-mock.json.gz``; the real-model comparison is run by hand, before and after a change::

    python tests/snapshot.py --model hf:smollm2-135m --out /tmp/before   # on the old commit
    python tests/snapshot.py --model hf:smollm2-135m --out /tmp/after    # on the new one
    python tests/snapshot.py --compare /tmp/before /tmp/after

A change that is meant to change outputs regenerates the fixture with ``python tests/snapshot.py --out DIR
--save-fixture`` and says why in its commit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from contextlib import chdir, redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.cli import main as harness  # noqa: E402
from harness.results import VOLATILE_KEYS  # noqa: E402

#: What snapshot() writes under ``root/normalised``: one file per output, named by its path.
CLOZE = ["--limit", "32"]
GENERATION = ["--limit", "8", "--task-args", "n_samples=5,max_new_tokens=24,decoding=ancestral;top_p=0.9"]
CHOICE = ["--limit", "5"]


def commands(model: str, model_args: str | None) -> list[list[str]]:
    """The runs, in order; output directories are relative to the snapshot root."""
    m = ["--model", model, "--device", "cpu"] + (["--model-args", model_args] if model_args else [])
    return [
        ["run", "--tasks", "provo", *m, *CLOZE, "--task-args", "n_samples=1000", "--output-dir", "provo"],
        ["run", "--tasks", "provo-paper", *m, *CLOZE, "--output-dir", "provo-paper"],
        ["run", "--tasks", "asset-valid", *m, *GENERATION, "--output-dir", "asset"],
        ["run", "--tasks", "dailydialog-pp", *m, *GENERATION, "--output-dir", "dialog"],
        ["run", "--tasks", "pragmatics-mcq", *m, *CHOICE, "--output-dir", "mcq"],
        ["run", "--tasks", "provo,provo-paper", "--human-only", *CLOZE, "--output-dir", "human-cloze"],
        ["run", "--tasks", "asset-valid,dailydialog-pp", "--human-only", "--limit", "8", "--output-dir", "human-gen"],
        ["run", "--tasks", "pragmatics-mcq", "--human-only", *CHOICE, "--output-dir", "human-mcq"],
        ["score", "provo", "--scorers=-top1", "--task-args", "ece.n_bins=15", "--output-dir", "provo-rescored"],
        [
            "leaderboard",
            "provo",
            "provo-paper",
            "asset",
            "dialog",
            "mcq",
            "human-cloze",
            "human-gen",
            "human-mcq",
            "-o",
            "board",
            "--no-plots",
        ],
    ]


def _run_dirs(root: Path, out: str) -> list[Path]:
    return sorted(p.parent for p in (root / out).glob("*/results.json")) or [root / out]


def _fix_commands(root: Path, model: str, model_args: str | None) -> list[list[str]]:
    """``score`` and ``leaderboard`` take run directories: fill in the model's slug, found after the runs."""
    fixed = []
    for cmd in commands(model, model_args):
        if cmd[0] == "score":
            cmd = ["score", str(_run_dirs(root, cmd[1])[0].relative_to(root)), *cmd[2:]]
        elif cmd[0] == "leaderboard":
            end = cmd.index("-o")
            dirs = [str(d.relative_to(root)) for out in cmd[1:end] for d in _run_dirs(root, out)]
            cmd = ["leaderboard", *dirs, *cmd[end:]]
        fixed.append(cmd)
    return fixed


def _drop_volatile(value: Any) -> Any:
    """``value`` without the keys that change from run to run, at any depth (a leaderboard copies run dates)."""
    if isinstance(value, dict):
        return {
            k: _drop_volatile(v) for k, v in value.items() if k not in VOLATILE_KEYS + ("library_versions", "created")
        }
    if isinstance(value, list):
        return [_drop_volatile(v) for v in value]
    return value


#: The time stamp in the names of results and samples files (``results_2026-11-23T16-05-03.123456.json``).
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{6}")


def normalise(path: Path, data_dir: Path) -> str:
    """A file's text with the keys that change from run to run removed, file time stamps written as ``<stamp>``,
    and the checkout's and the data's locations written as ``<repo>`` and ``<data>`` (results record the paths of
    packaged models and data files, and CI runs in another folder than the one the fixture was recorded in)."""
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        text = json.dumps(_drop_volatile(data), indent=2, ensure_ascii=False) + "\n"
    else:
        text = path.read_text(encoding="utf-8")
    text = text.replace(str(data_dir), "<data>").replace(str(REPO), "<repo>")
    return STAMP.sub("<stamp>", text)


def snapshot(model: str, root: Path, data_dir: Path, model_args: str | None = None) -> dict[str, str]:
    """Run every command under ``root``; returns ``{relative path: normalised text}`` of every output."""
    root.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HARNESS_NO_PROGRESS", "1")
    with chdir(root):
        n_runs = sum(1 for c in commands(model, model_args) if c[0] == "run")
        for i, cmd in enumerate(commands(model, model_args)):
            if i >= n_runs:
                cmd = _fix_commands(root, model, model_args)[i]
            if cmd[0] == "run" or cmd[0] == "score":
                cmd = [*cmd, "--data-dir", str(data_dir)]
            with redirect_stdout(StringIO()):
                code = harness(cmd)
            if code != 0:
                raise RuntimeError(f"harness {' '.join(cmd)} exited with {code}")
    return collect(root, data_dir)


def collect(root: Path, data_dir: Path) -> dict[str, str]:
    outputs: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == "normalised" or not path.is_file():
            continue
        if path.suffix in (".json", ".jsonl") and path.parent.name != "api-cache":
            outputs[STAMP.sub("<stamp>", str(rel))] = normalise(path, data_dir)
    return outputs


def compare(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs: files missing on one side, and files whose normalised text differs."""
    problems = [f"only before: {k}" for k in sorted(set(before) - set(after))]
    problems += [f"only after: {k}" for k in sorted(set(after) - set(before))]
    problems += [f"differs: {k}" for k in sorted(set(before) & set(after)) if before[k] != after[k]]
    return problems


#: The mock adapter's snapshot, the reference ``tests/test_snapshot.py`` compares with.
FIXTURE = REPO / "tests" / "fixtures" / "snapshot-mock.json.gz"


def save_fixture(outputs: dict[str, str], path: Path = FIXTURE) -> None:
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(json.dumps(outputs, sort_keys=True, ensure_ascii=False).encode("utf-8"))


def load_fixture(path: Path = FIXTURE) -> dict[str, str]:
    with gzip.open(path, "rb") as f:
        return dict(json.loads(f.read().decode("utf-8")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="mock:snapshot")
    parser.add_argument("--model-args")
    parser.add_argument("--out", type=Path, help="snapshot root to run in")
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("HARNESS_DATA_DIR", REPO.parent / "shared" / "data"))
    )
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument(
        "--save-fixture", action="store_true", help=f"write the outputs to {FIXTURE.relative_to(REPO)} (mock only)"
    )
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (collect(root, args.data_dir.resolve()) for root in args.compare)
        problems = compare(before, after)
        print("\n".join(problems) or f"identical: {len(before)} files")
        return 1 if problems else 0
    if args.out is None:
        parser.error("--out is required unless --compare is given")
    outputs = snapshot(args.model, args.out, args.data_dir.resolve(), args.model_args)
    print(f"{len(outputs)} output files under {args.out}")
    if args.save_fixture:
        if not args.model.startswith("mock:"):
            parser.error("--save-fixture: the fixture is the mock adapter's snapshot")
        save_fixture(outputs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
