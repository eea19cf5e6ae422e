"""Show that a YAML-only task over the generic loaders gives what a built-in task's dedicated loader gives.

For each pair (built-in task, its twin in ``examples/your-data/``) this runs both, under the same task name (a
task's name seeds its random streams, so two names would draw different samples), on the same model, and compares:
the instances, the ``samples_<task>.jsonl`` bytes, and every metric, control, headline and "unavailable" entry.

    .venv/bin/python scripts/compare_generic_tasks.py --data-dir ../shared/data --model mock:test
    .venv/bin/python scripts/compare_generic_tasks.py --data-dir ../shared/data --human-only --tasks provo

Exit status 0 when every pair is identical, 1 otherwise (a difference is printed with the first differing record).
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
#: Built-in task -> its YAML-only twin.
PAIRS = {
    "provo": "examples/your-data/provo-long.yaml",
    "asset-valid": "examples/your-data/asset-valid.yaml",
    "wmt14-en-de": "examples/your-data/wmt14-en-de.yaml",
    "dailydialog-pp": "examples/your-data/dailydialog-pp.yaml",
    "pragmatics-mcq": "examples/your-data/pragmatics-mcq.yaml",
}
SHARED_NAME = "generic-twin"
COMPARED = ("metrics", "controls", "headline", "unavailable", "notes", "n-samples")


def renamed_copy(path: Path, folder: Path, label: str) -> Path:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["task"] = SHARED_NAME
    out = folder / f"{label}.yaml"
    out.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return out


def run(task_file: Path, out: Path, args: argparse.Namespace) -> Path:
    command = [sys.executable, "-m", "harness", "run", "--tasks", str(task_file), "--output-dir", str(out)]
    command += ["--data-dir", args.data_dir, "--seed", str(args.seed)]
    command += ["--human-only"] if args.human_only else ["--model", args.model]
    if args.limit:
        command += ["--limit", str(args.limit)]
    subprocess.run(command, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    found = [Path(p).parent for p in glob.glob(str(out / "*" / "results.json"))]
    if len(found) != 1:
        raise SystemExit(f"expected one run folder under {out}, found {found}")
    return found[0]


def task_names(results: dict[str, Any]) -> list[str]:
    """The twin's names in the results: ``generic-twin``, or one per decoding (``generic-twin@ancestral``)."""
    return sorted(k for k in results["metrics"] if k == SHARED_NAME or k.startswith(SHARED_NAME + "@"))


def latest_samples(folder: Path, task: str) -> bytes:
    return Path(sorted(glob.glob(glob.escape(str(folder / f"samples_{task}_")) + "*.jsonl"))[-1]).read_bytes()


def compare(builtin: str, twin: str, args: argparse.Namespace, scratch: Path) -> bool:
    folder = scratch / builtin
    folder.mkdir()
    builtin_file = REPO / "harness" / "tasks" / f"{builtin}.yaml"
    a = run(renamed_copy(builtin_file, folder, "builtin"), folder / "builtin-run", args)
    b = run(renamed_copy(REPO / twin, folder, "generic"), folder / "generic-run", args)
    ra: dict[str, Any] = json.loads((a / "results.json").read_text())
    rb: dict[str, Any] = json.loads((b / "results.json").read_text())
    same = task_names(ra) == task_names(rb)
    records = n_metrics = 0
    for task in task_names(ra):
        sa, sb = latest_samples(a, task), latest_samples(b, task)
        records += sa.count(b"\n")
        if sa != sb:
            same = False
            la, lb = sa.splitlines(), sb.splitlines()
            diff = [i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y]
            fields = sorted({k for i in diff for k, v in json.loads(la[i]).items() if json.loads(lb[i]).get(k) != v})
            print(
                f"  {task}: samples differ in {len(diff)} of {len(la)} records (line counts {len(la)}, {len(lb)}), "
                f"in the fields {', '.join(fields)}"
            )
            if diff:
                x, y = json.loads(la[diff[0]]), json.loads(lb[diff[0]])
                for key in x:
                    if x[key] != y.get(key):
                        print(
                            f"    first difference, record {diff[0] + 1}, field {key}: {str(x[key])[:160]} | "
                            f"{str(y.get(key))[:160]}"
                        )
        n_metrics += len(ra["metrics"].get(task, {}))
        for key in COMPARED:
            x, y = ra.get(key, {}).get(task), rb.get(key, {}).get(task)
            if x != y:
                same = False
                print(f"  {task}: '{key}' differs: {str(x)[:200]} | {str(y)[:200]}")
    verdict = "identical" if same else "DIFFERENT"
    print(f"{builtin} vs {twin}: {verdict} ({records} sample records, {n_metrics} metrics)", flush=True)
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--model", default="mock:test")
    parser.add_argument("--human-only", action="store_true")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", default=",".join(PAIRS), help="built-in tasks to compare (default: all five)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="generic-twins-") as tmp:
        results = [compare(t, PAIRS[t], args, Path(tmp)) for t in args.tasks.split(",")]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
