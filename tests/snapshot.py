"""The fixed set of runs whose outputs must not change when the code is reorganised, and how to compare them.

Why: a refactoring of the runner, the request kinds or an adapter must leave every output the harness writes as
it was: identical words, counts and ids; numbers within 1e-9 relative. ``snapshot(model, root)`` runs the same
commands every time (Provo and provo-paper with ``--limit 32``, asset-valid and dailydialog-pp with ``--limit 8``
and two decoders, pragmatics-mcq with ``--limit 5``, the human-only runs of the same tasks, ``harness score`` of the
Provo run with one scorer removed and a scorer argument changed, and the leaderboard of them all) and returns every
output file with its volatile keys (date, timing) removed and its paths written as placeholders.

``compare`` does not ask for identical bytes because a snapshot recorded on one machine must hold on another, and
the last bits of a float differ between CPUs (numpy sums in another order with other SIMD widths; the semantic
probe's float32 sentence embeddings differ by about 1e-7, so its cosine numbers get ``FLOAT32_TOL``, 1e-5). A real
change of a number is far larger, and every word, count, id and key must still be identical
(``tests/test_snapshot_compare.py`` shows what is caught and what is not).

The fast test (``tests/test_snapshot.py``) runs it on the mock adapter against
``tests/fixtures/snapshot-mock.json.gz``; the real-model comparison is run by hand, before and after a change::

    python tests/snapshot.py --model hf:smollm2-135m --out /tmp/before   # on the old commit
    python tests/snapshot.py --model hf:smollm2-135m --out /tmp/after    # on the new one
    python tests/snapshot.py --compare /tmp/before /tmp/after    # same comparison as the test: compare()

A change that is meant to change outputs regenerates the fixture with ``python tests/snapshot.py --out DIR
--save-fixture`` and says why in its commit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import chdir, redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness.cli import main as harness  # noqa: E402
from harness.outputs.results import VOLATILE_KEYS  # noqa: E402

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


def locations(data_dir: Path) -> list[tuple[str, str]]:
    """``(path, placeholder)`` pairs ``normalise`` replaces, longest path first (so a data folder inside the
    checkout becomes ``<data>``, not ``<repo>/...``): the data folder as given (made absolute) and resolved (results
    record the resolved path, so a data folder reached through a symbolic link appears both ways), the installed
    packages' folder (packaged models are recorded there; it names the Python version and need not be inside the
    checkout) and the checkout, each as given and resolved."""
    pairs = {
        str(data_dir.absolute()): "<data>",
        str(data_dir.resolve()): "<data>",
        str(REPO): "<repo>",
        str(Path(__file__).absolute().parents[1]): "<repo>",
    }
    for kind in ("purelib", "platlib"):
        packages = Path(sysconfig.get_path(kind))
        pairs |= {str(packages.absolute()): "<site-packages>", str(packages.resolve()): "<site-packages>"}
    return sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True)


def normalise(path: Path, data_dir: Path) -> str:
    """A file's text with the keys that change from run to run removed, file time stamps written as ``<stamp>``,
    and the locations of the checkout, the data and the installed packages (given and resolved, ``locations``)
    written as ``<repo>``, ``<data>`` and ``<site-packages>`` (results record the paths of packaged models and data
    files, and CI runs in another folder, on another Python, than the one the fixture was recorded in)."""
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        text = json.dumps(_drop_volatile(data), indent=2, ensure_ascii=False) + "\n"
    else:
        text = path.read_text(encoding="utf-8")
    for location, placeholder in locations(data_dir):
        text = text.replace(location, placeholder)
    return STAMP.sub("<stamp>", text)


def snapshot(model: str, root: Path, data_dir: Path, model_args: str | None = None) -> dict[str, str]:
    """Run every command under ``root``; returns ``{relative path: normalised text}`` of every output."""
    root.mkdir(parents=True, exist_ok=True)
    data_dir = data_dir.absolute()  # the runs start in root
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


#: How far two numbers may be apart and still count as the same (``math.isclose``): far below anything reported
#: (results and the leaderboard show 4 decimals), far above the last-bit differences between CPUs (about 1e-16
#: relative: numpy sums in another order with other SIMD widths).
REL_TOL = 1e-9
ABS_TOL = 1e-12
#: Numbers under a key naming the semantic probe's cosine measure (``cosine_w1_mh``, ``cosine_distances``, and
#: everything below such a key) come from float32 sentence embeddings, a transformer run on the CPU's own float32
#: kernels: another CPU gives embeddings about 1e-7 apart, so these numbers move by up to a few 1e-7 (and those
#: written with 6 decimals by one unit of the last). They are compared within ``FLOAT32_TOL``, relative or
#: absolute: still ten times below the 4 decimals reported.
FLOAT32_KEY = re.compile(r"^cosine_")
FLOAT32_TOL = 1e-5
#: How many differences of one file a problem line names.
SHOWN = 3

#: A number standing alone in a text (not part of a word, a hash or a version): an optional sign, digits with an
#: optional fraction, an optional exponent; or Python's and JSON's spellings of the special floats.
NUMBER = re.compile(r"(?<![\w.])(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?Infinity|NaN)(?![\w.])")


def same_number(before: float, after: float, rel_tol: float = REL_TOL, abs_tol: float = ABS_TOL) -> bool:
    """Whether two floats are the same number up to the last-bit noise of another CPU (NaN equals NaN)."""
    if math.isnan(before) or math.isnan(after):
        return math.isnan(before) and math.isnan(after)
    return math.isclose(before, after, rel_tol=rel_tol, abs_tol=abs_tol)


def _clip(value: Any, width: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _walk(before: Any, after: Any, where: str, float32: bool = False) -> Iterator[str]:
    """The differences of two parsed JSON values: floats at the tolerance (``FLOAT32_TOL`` at and below a
    ``FLOAT32_KEY``), everything else exactly (an int never equals a float, a bool never equals a number, objects
    must have the same keys in the same order)."""
    if isinstance(before, float) and isinstance(after, float):
        tol = (FLOAT32_TOL, FLOAT32_TOL) if float32 else (REL_TOL, ABS_TOL)
        if not same_number(before, after, *tol):
            yield f"{where}: {before!r} -> {after!r}"
    elif isinstance(before, dict) and isinstance(after, dict):
        if list(before) != list(after):
            gone, new = [k for k in before if k not in after], [k for k in after if k not in before]
            yield f"{where}: keys {gone} only before, {new} only after" if gone or new else f"{where}: key order"
        for key in before:
            if key in after:
                below = float32 or bool(FLOAT32_KEY.search(key))
                yield from _walk(before[key], after[key], f"{where}.{key}", below)
    elif isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            yield f"{where}: {len(before)} items -> {len(after)}"
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            yield from _walk(b, a, f"{where}[{i}]", float32)
    elif type(before) is not type(after) or before != after:
        yield f"{where}: {_clip(before)} -> {_clip(after)}"


def value_differences(before: Any, after: Any) -> list[str]:
    """The differences of two parsed JSON values at the snapshot's tolerances: for a test that compares numbers
    two runs computed in different batches, whose float32 parts may differ in the last bits."""
    return list(_walk(before, after, "$"))


def _is_float_token(token: str) -> bool:
    return any(c in token for c in ".eEIN")


def _text_differences(before: str, after: str, where: str) -> Iterator[str]:
    """The first difference of two texts: the numbers in them (``NUMBER``) as numbers, integers exactly as written
    and others at the tolerance; the text between them exactly."""
    b_parts, a_parts = NUMBER.split(before), NUMBER.split(after)
    column = 1
    for i, (b, a) in enumerate(zip(b_parts, a_parts, strict=False)):
        numbers = i % 2 == 1 and _is_float_token(b) and _is_float_token(a)
        if b != a and not (numbers and same_number(float(b), float(a))):
            yield f"{where}, column {column}: {_clip(b)} -> {_clip(a)}"
            return
        column += len(b)
    if len(b_parts) != len(a_parts):
        yield f"{where}: {_clip(before)} -> {_clip(after)}"


def _lines(before: str, after: str, parse: bool) -> Iterator[str]:
    b_lines, a_lines = before.splitlines(), after.splitlines()
    if len(b_lines) != len(a_lines):
        yield f"{len(b_lines)} lines -> {len(a_lines)}"
    for n, (b, a) in enumerate(zip(b_lines, a_lines, strict=False), start=1):
        if b == a:
            continue
        try:
            parsed = (json.loads(b), json.loads(a)) if parse else None
        except ValueError:
            parsed = None
        if parsed is None:
            yield from _text_differences(b, a, f"line {n}")
        else:
            yield from _walk(*parsed, f"line {n}")


def differences(name: str, before: str, after: str) -> list[str]:
    """Where two normalised texts of the output file ``name`` differ: JSON files walked as parsed data, JSON-lines
    files line by line, other texts with their numbers tokenised (``_text_differences``); numbers within
    ``REL_TOL`` relative (or ``ABS_TOL`` absolute; ``FLOAT32_TOL`` for the float32 embeddings' ``FLOAT32_KEY``) are
    the same, everything else must be identical."""
    if before == after:
        return []
    if name.endswith(".json"):
        try:
            return list(_walk(json.loads(before), json.loads(after), "$"))
        except ValueError:
            pass
    return list(_lines(before, after, parse=name.endswith(".jsonl")))


def compare(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs: files missing on one side, and files whose normalised outputs differ in a word, a count, an
    id or a text, or in a number by more than ``REL_TOL`` relative (``differences``); one line a file, naming its
    first differences."""
    problems = [f"only before: {k}" for k in sorted(set(before) - set(after))]
    problems += [f"only after: {k}" for k in sorted(set(after) - set(before))]
    for name in sorted(set(before) & set(after)):
        found = differences(name, before[name], after[name])
        if found:
            more = f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""
            problems.append(f"differs: {name}: " + "; ".join(found[:SHOWN]) + more)
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
        before, after = (collect(root, args.data_dir) for root in args.compare)
        problems = compare(before, after)
        print("\n".join(problems) or f"identical: {len(before)} files")
        return 1 if problems else 0
    if args.out is None:
        parser.error("--out is required unless --compare is given")
    outputs = snapshot(args.model, args.out, args.data_dir, args.model_args)
    print(f"{len(outputs)} output files under {args.out}")
    if args.save_fixture:
        if not args.model.startswith("mock:"):
            parser.error("--save-fixture: the fixture is the mock adapter's snapshot")
        save_fixture(outputs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
