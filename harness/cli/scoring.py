"""``harness score``: a finished run's saved outputs scored again, without loading a model
(``harness.run.rescoring``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.parsing import add_command, split_names
from harness.cli.running import FULL_TABLE_HELP, print_written
from harness.outputs.results import format_table
from harness.run.rescoring import rescore
from harness.task_config import parse_task_args


def add_score(sub: Any) -> None:
    p = add_command(
        sub,
        "score",
        "score a finished run's saved outputs again (no model is loaded)",
        (
            "harness score runs/hf__smollm2-135m --tasks provo --scorers +sample_size,-ece",
            "harness score runs/hf__smollm2-135m --tasks asset-valid --scorers lexical,semantic",
            "harness score runs/hf__smollm2-135m --tasks provo --scorers=-top1 --task-args ece.n_bins=15",
        ),
    )
    p.add_argument(
        "target", help="a run folder, one of its results files, or one of its samples_<task>_<date>.jsonl files"
    )
    p.add_argument(
        "--scorers",
        help="an exact list (recorded arguments kept) or +NAME/-NAME changes to the run's list (harness ls scorers)",
    )
    p.add_argument("--task-args", help="SCORER.KEY=value,... overriding scorer arguments")
    p.add_argument(
        "--tasks",
        help="comma-separated tasks of the run to score (default: all); a generation task's name finds its decoding "
        "variant (TASK@ancestral) when the run has only that one",
    )
    p.add_argument("--output-dir", help="where the new results go (default: RUN_DIR/rescored)")
    p.add_argument("--data-dir", help="data root (default: the run's, else $HARNESS_DATA_DIR, else the user cache)")
    p.add_argument("--full-table", action="store_true", help=FULL_TABLE_HELP)
    p.set_defaults(handler=cmd_score)


def cmd_score(args: argparse.Namespace) -> int:
    results, path = rescore(
        Path(args.target),
        output_dir=Path(args.output_dir) if args.output_dir else None,
        scorers=args.scorers,
        scorer_args=parse_task_args(args.task_args),
        tasks=split_names(args.tasks) or None,
        data_dir=args.data_dir,
    )
    print(format_table(results, full=args.full_table))
    print_written(path.parent, path)
    return 0
