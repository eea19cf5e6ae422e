"""What the worker pools cost and gain against a run in one process: the same work as fresh ``harness run``
processes (so Ray's start-up, the workers' start, the model loads and the scoring are all in the wall time a user
sees), in one process, in local worker processes (``--workers``) and on Ray.

The answering time counts from the first block sent (in one process: after the model load; in a pool: once the
first worker has loaded it), so the Ray cluster's start and the workers' start-up are reported apart.

Configurations (``--configs``, default all; ``C`` is the machine's CPU count):

* ``local``: ``harness run`` in one process, torch on all its threads;
* ``local-<C>x1``: ``C`` local worker processes of one thread each (``--workers C``);
* ``ray-1x<C>``: one Ray worker with all ``C`` CPUs (the same thread count as ``local``);
* ``ray-<C>x1``: ``C`` Ray workers of one CPU each.

For each: the wall time of the command, Ray's connection (cluster start), the first worker's start, the model load
(the slowest worker's), the answering time (first block sent to last block stored) and its throughput, and the
scoring time, from the run's own ``results.json`` (``timing``, ``execution``). A second model, ``mock`` (answers in
microseconds), measures the per-block cost of a pool's round trip itself: (pool answering time - local answering
time) / blocks.

Example (the measurement ``docs/distributed.md`` reports: 256 Provo contexts are 4 blocks of 64, enough to keep
two workers busy)::

    python benchmarks/bench_executors.py --limit 256 --n 1000 --mock-limit 2000

Run it on a quiet machine: it times real processes and nothing else may run beside them. Every number is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HARNESS = str(Path(sys.executable).parent / "harness")


def configurations(cpus: int) -> dict[str, list[str]]:
    return {
        "local": [],
        f"local-{cpus}x1": ["--workers", str(cpus)],
        f"ray-1x{cpus}": ["--executor", "ray", "--workers", "1", "--cpus-per-worker", str(cpus)],
        f"ray-{cpus}x1": ["--executor", "ray", "--workers", str(cpus), "--cpus-per-worker", "1"],
    }


def run_once(args: list[str], out: Path) -> dict[str, Any]:
    env = {**os.environ, "HARNESS_NO_PROGRESS": "1"}
    start = time.perf_counter()
    done = subprocess.run([HARNESS, "run", *args, "--output-dir", str(out)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"harness run {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    (results_path,) = out.glob("*/results.json")
    results = json.loads(results_path.read_text())
    timing = results["timing"]
    tasks = [k for k in timing if isinstance(timing[k], dict)]
    answering = sum(timing[t].get("requests_seconds", 0.0) for t in tasks)
    # A pool's tasks share the answering time (blocks of all tasks interleave): take the longest, not the sum.
    if "workers" in results["execution"]:
        answering = max(timing[t].get("requests_seconds", 0.0) for t in tasks)
    blocks = sum(b.get("sent", 0) for b in results["execution"]["blocks"].values())
    instances = sum(results["n-samples"][t]["effective"] for t in tasks)
    execution = results["execution"]
    return {
        "wall_seconds": round(wall, 2),
        "ray_connect_seconds": execution.get("connect_seconds"),
        "first_worker_ready_seconds": execution.get("first_worker_ready_seconds"),
        "model_load_seconds": timing.get("model_load_seconds"),
        "answering_seconds": round(answering, 2),
        "instances_per_second": round(instances / answering, 3) if answering else None,
        "scoring_seconds": round(sum(timing[t]["scoring_seconds"] for t in tasks), 2),
        "blocks": blocks,
        "instances": instances,
        "execution": results["execution"],
        "metrics": {t: {k: v for k, v in results["results"][t].items() if k.endswith(",none")} for t in tasks},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="hf:smollm2-135m", help="the real model (default: the packaged SmolLM2)")
    parser.add_argument("--tasks", default="provo")
    parser.add_argument("--limit", type=int, default=256, help="instances of the real model's run (4 blocks of 64)")
    parser.add_argument("--n", type=int, default=1000, help="samples per Provo context (n_samples)")
    parser.add_argument("--mock-limit", type=int, default=2000, help="instances of the mock run (0: skip it)")
    parser.add_argument("--configs", help="comma-separated subset of the configurations (default: all)")
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args()

    cpus = os.cpu_count() or 1
    configs = configurations(cpus)
    chosen = args.configs.split(",") if args.configs else list(configs)
    unknown = [c for c in chosen if c not in configs]
    if unknown:
        raise SystemExit(f"--configs: unknown {unknown[0]!r} (known: {', '.join(configs)})")
    jobs = [("real", [
        "--tasks", args.tasks, "--model", args.model, "--device", "cpu", "--limit", str(args.limit),
        "--task-args", f"n_samples={args.n}",
    ])]  # fmt: skip
    if args.mock_limit:
        jobs.append(("mock", [
            "--tasks", "provo", "--model", "mock:bench", "--limit", str(args.mock_limit),
            "--task-args", f"n_samples={args.n}",
        ]))  # fmt: skip
    report: dict[str, Any] = {"machine": {"cpus": cpus, "platform": platform.platform()}, "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for job, job_args in jobs:
            for name in chosen:
                measured = run_once(job_args + configs[name], Path(tmp) / f"{job}-{name}")
                report["runs"][f"{job}/{name}"] = measured
                pool_part = ""
                if measured["ray_connect_seconds"] is not None:
                    pool_part = f"  ray start {measured['ray_connect_seconds']:.1f}s,"
                if measured["first_worker_ready_seconds"] is not None:
                    pool_part += f"  first worker ready {measured['first_worker_ready_seconds']:.1f}s"
                print(
                    f"{job:5s} {name:10s} wall {measured['wall_seconds']:7.1f}s{pool_part}  load "
                    f"{measured['model_load_seconds']}s"
                    f"  answering {measured['answering_seconds']:7.1f}s ({measured['instances_per_second']} inst/s,"
                    f" {measured['blocks']} blocks)  scoring {measured['scoring_seconds']:.1f}s",
                    flush=True,
                )
    for job, _ in jobs:
        local = report["runs"].get(f"{job}/local")
        for name in chosen:
            run = report["runs"][f"{job}/{name}"]
            if name == "local" or local is None:
                continue
            extra_wall = run["wall_seconds"] - local["wall_seconds"]
            extra_answer = run["answering_seconds"] - local["answering_seconds"]
            per_block = extra_answer / run["blocks"] if run["blocks"] else 0.0
            same = run["metrics"] == local["metrics"]
            run["against_local"] = {
                "extra_wall_seconds": round(extra_wall, 2),
                "extra_answering_seconds": round(extra_answer, 2),
                "extra_seconds_per_block": round(per_block, 4),
                "same_metrics": same,
            }
            print(
                f"{job:5s} {name:10s} vs local: {extra_wall:+.1f}s wall, {extra_answer:+.1f}s answering "
                f"({per_block * 1000:+.1f} ms per block); same metrics: {same}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
