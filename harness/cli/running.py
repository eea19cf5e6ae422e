"""``harness run``, ``harness sweep`` and ``harness import``: the commands that produce a run folder.

``import`` belongs here rather than beside ``export``: it is a run of the replay adapter (``harness.run.importing``),
writes the same run folder and prints the same table as ``run``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.cli.parsing import add_command, add_executor_arguments, batch_size, executor_options, split_names
from harness.errors import HarnessError
from harness.outputs.results import format_table
from harness.outputs.run_dir import MERGED, latest_invocation
from harness.run.importing import import_options
from harness.run.options import RunOptions
from harness.run.runner import run
from harness.run.sweep import pair_model_args, parse_model, read_plan, run_all
from harness.task_config import parse_task_args

FULL_TABLE_HELP = "print every metric, not only the headline table"


def add_run(sub: Any) -> None:
    p = add_command(
        sub,
        "run",
        "evaluate a model (or only the human reference) on tasks",
        (
            "harness run --tasks provo --model hf:smollm2-135m --limit 20",
            "harness run --tasks provo,provo-paper --human-only --output-dir runs/human",
            'harness run --tasks asset-valid --model mock:test --task-args "n_samples=5,decoding=ancestral;top_p=0.9"',
            "harness run --tasks provo --model hf:smollm2-135m --model-args dtype=bfloat16 --task-args ece.n_bins=15",
            "harness run --tasks provo --model hf:smollm2-135m --workers 2 --cpus-per-worker 4",
        ),
    )
    p.add_argument("--tasks", required=True, help="comma-separated task names (harness ls tasks) or task YAML paths")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--model",
        action="append",
        help="KIND:NAME (kinds: harness ls models), a model name or path; repeat it to run several models",
    )
    group.add_argument(
        "--human-only",
        action="store_true",
        help="compute only the human reference numbers (human variability and controls, human ECE, top-1); no model",
    )
    p.add_argument(
        "--model-args",
        action="append",
        help="k=v,... passed to the model adapter (harness ls models --options); once for every --model, or each",
    )
    p.add_argument("--task-args", help="k=v,... overriding task params (n_samples) or scorer args (SCORER.KEY)")
    p.add_argument("--limit", type=int, help="evaluate only the first N instances of each task")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    p.add_argument("--output-dir", default="runs", help="where results go (default ./runs)")
    p.add_argument("--data-dir", help="data root (default: $HARNESS_DATA_DIR, else the user cache directory)")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto")
    p.add_argument("--batch-size", type=batch_size, default="auto", help="N or auto")
    p.add_argument("--full-table", action="store_true", help=FULL_TABLE_HELP)
    add_executor_arguments(p)
    p.set_defaults(handler=cmd_run)


def add_sweep(sub: Any) -> None:
    p = add_command(
        sub,
        "sweep",
        "run every model of a run-plan YAML file over its tasks (docs/distributed.md)",
        ("harness sweep plan.yaml", "harness sweep plan.yaml --executor ray --workers 2 --data-dir data"),
    )
    p.add_argument("plan", help="the plan: tasks, task_args, models (each KIND:NAME with its model_args), output_dir")
    p.add_argument("--data-dir", help="data root (default: the plan's data_dir, else $HARNESS_DATA_DIR, else cache)")
    p.add_argument("--full-table", action="store_true", help=FULL_TABLE_HELP)
    add_executor_arguments(p)
    p.set_defaults(handler=cmd_sweep)


def add_import(sub: Any) -> None:
    p = add_command(
        sub,
        "import",
        "score outputs made elsewhere (a JSON Lines file, or a paper's released generations) as a model",
        (
            "harness import my_outputs.jsonl --task provo --name my-model --output-dir runs/imported",
            "harness import provo/reference_outputs/TVD/BLOOM/Generations --task provo-paper --name bloom",
            "harness import provo/reference_outputs/TVD/ChatGPT/Generations --task provo --format provo-chatgpt"
            " --setting diverse --name chatgpt-diverse",
        ),
        description="score outputs made elsewhere as a model (docs/importing.md)",
    )
    p.add_argument("source", help="the outputs file or folder (relative paths are also looked up in the data folder)")
    p.add_argument("--task", required=True, help="the task the outputs answer (a task name or YAML file)")
    p.add_argument("--name", required=True, help="the system's name in results and leaderboards")
    p.add_argument("--format", default="auto", help="the replay adapter's format (harness ls models --options)")
    p.add_argument("--setting", help="which of a file's settings to read (the replay adapter's setting option)")
    p.add_argument("--task-args", help="k=v,... as for harness run (mode=paper; SCORER.KEY=value)")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0): the human splits and bootstraps")
    p.add_argument("--output-dir", default="runs", help="where results go (default ./runs)")
    p.add_argument("--data-dir", help="data root (default: $HARNESS_DATA_DIR, else the user cache directory)")
    p.add_argument("--full-table", action="store_true", help=FULL_TABLE_HELP)
    p.set_defaults(handler=cmd_import)


def cmd_run(args: argparse.Namespace) -> int:
    if args.human_only and args.model_args:
        raise HarnessError("--model-args: not used with --human-only")
    base = RunOptions(
        tasks=split_names(args.tasks) or [],
        model=None,
        task_args=parse_task_args(args.task_args),
        limit=args.limit,
        seed=args.seed,
        output_dir=Path(args.output_dir),
        data_dir=args.data_dir,
        executor=executor_options(args),
    )
    if args.human_only:
        plan = [base]
    else:
        pairs = zip(args.model, pair_model_args(args.model, args.model_args), strict=True)
        plan = [replace(base, model=parse_model(text, margs, args.device, args.batch_size)) for text, margs in pairs]
    return run_plan(plan, args.full_table)


def cmd_sweep(args: argparse.Namespace) -> int:
    plan = read_plan(Path(args.plan), executor_options(args))
    if args.data_dir:
        plan = [replace(options, data_dir=args.data_dir) for options in plan]
    return run_plan(plan, args.full_table)


def print_written(out_dir: Path, merged: Path | None = None) -> None:
    """The last line of every command that writes a run: the new results file and the merged one."""
    merged = merged or out_dir / MERGED
    print(f"\nwrote {latest_invocation(out_dir)} (every task's latest result: {merged})")


def run_plan(plan: list[RunOptions], full: bool) -> int:
    """One run, or several (a sweep); with several, each run's table is headed by its model."""
    several = len(plan) > 1

    def report(options: RunOptions, results: dict) -> None:
        if several:
            print(f"\n== {options.model.label if options.model else 'human-only'} ==")
        print(format_table(results, full=full))
        print_written(options.run_dir)

    failed = run_all(plan, report)
    if not failed:
        return 0
    for options, message in failed:
        print(f"failed: {options.model.label if options.model else 'human-only'}: {message}", file=sys.stderr)
    print(f"{len(failed)} of {len(plan)} runs failed; the others' results are written", file=sys.stderr)
    return 2


def cmd_import(args: argparse.Namespace) -> int:
    options = import_options(
        args.source,
        task=args.task,
        name=args.name,
        fmt=args.format,
        setting=args.setting,
        task_args=parse_task_args(args.task_args),
        seed=args.seed,
        output_dir=Path(args.output_dir),
        data_dir=args.data_dir,
    )
    results = run(options)
    print(format_table(results, full=args.full_table))
    print_written(options.run_dir)
    return 0
