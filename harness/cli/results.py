"""``harness leaderboard`` and ``harness export``: finished runs read, and written as something else (a
leaderboard, another tool's files). Neither touches the run's own files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli.parsing import add_command
from harness.errors import HarnessError
from harness.extras import install_hint, missing_modules
from harness.files import WriteError, ensure_output_dir
from harness.outputs.results import level_text
from harness.outputs.run_dir import TaskSource, read_samples, task_sources

#: ``harness export --format`` choices (``harness.exports.FORMATS``, imported only when exporting).
EXPORT_FORMATS = ("lm-eval", "inspect")


def add_leaderboard(sub: Any) -> None:
    p = add_command(
        sub,
        "leaderboard",
        "fold results.json files into a leaderboard: JSON, an HTML page, PNG plots",
        (
            "harness leaderboard runs/hf__smollm2-135m runs/human -o leaderboards/provo",
            "harness leaderboard runs/old/results.json runs/new/results.json -o leaderboards/mixed --allow-mixed",
        ),
        description=(
            "fold results.json files into a leaderboard: JSON, an HTML page, PNG plots (docs/leaderboard.md)\n\n"
            "Every interval is shown at the level it was computed at (a scorer's confidence option, default 95%).\n"
            "A column whose runs computed intervals at different levels (--task-args NAME.confidence=0.9 in one run)\n"
            "is merged, not refused: its heading says e.g. '90%/95% CI, mixed levels', each of its cells gives its\n"
            "own level, and a warning line names the column."
        ),
    )
    p.add_argument("results", nargs="+", help="run folders or results files (human-only runs included)")
    p.add_argument("-o", "--output", required=True, help="the leaderboard's folder, e.g. leaderboards/NAME")
    p.add_argument(
        "--allow-mixed",
        action="store_true",
        help="merge results that are not comparable (task version, data hash, instances, samples per input), marked",
    )
    p.add_argument("--no-plots", action="store_true", help="write no PNG figures (the page then shows none)")
    p.set_defaults(handler=cmd_leaderboard)


def add_export(sub: Any) -> None:
    p = add_command(
        sub,
        "export",
        "write a finished run in another tool's format (lm-eval, inspect)",
        (
            "harness export runs/hf__smollm2-135m --format lm-eval -o exports/smollm2",
            "harness export runs/hf__smollm2-135m/results.json --format inspect -o exports/smollm2-inspect",
        ),
    )
    p.add_argument("target", help="a run folder or one of its results files")
    p.add_argument(
        "--format", required=True, choices=EXPORT_FORMATS, help="lm-eval: results and samples files; inspect: eval logs"
    )
    p.add_argument("-o", "--output", required=True, help="folder to write the export into")
    p.set_defaults(handler=cmd_export)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from harness.leaderboard import build

    output = Path(args.output)
    ensure_output_dir(output, "-o")
    draw = not args.no_plots
    missing = missing_modules("plots") if draw else []
    if missing:  # the JSON and the page need no matplotlib; the figures do, and are left out with a note
        print(
            f"note: no figures: the 'plots' extra is not installed (no {', '.join(missing)}): "
            f"{install_hint('plots')} (--no-plots leaves them out without this note)",
            file=sys.stderr,
        )
        draw = False
    board = build([Path(p) for p in args.results], output, allow_mixed=args.allow_mixed, plots=draw)
    rows = sum(1 for s in board["systems"] if s["kind"] == "model")
    print(f"{rows} systems, {len(board['tasks'])} tasks ({', '.join(board['tasks'])})")
    for mixed in board["mixed"]:
        why = "; ".join(mixed["differs"])
        print(f"warning: merged although not comparable: {mixed['task']}: {mixed['source']}: {why}")
    for column in board["mixed_ci_levels"]:
        levels = ", ".join(level_text(level) for level in column["levels"])
        print(
            f"warning: {column['task']}: {column['column']}: intervals at different levels ({levels}); "
            "marked in the leaderboard, each cell with its level"
        )
    plots = len(board["files"].get("plots", []))
    print(f"wrote {output / 'leaderboard.json'}, {output / board['files']['html']} and {plots} plots")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from harness.exports import export_run

    written: list[Path] = []
    sources = task_sources(Path(args.target))
    by_file: dict[Path, list[TaskSource]] = {}
    for source in sources:
        by_file.setdefault(source.results_path, []).append(source)
    ensure_output_dir(Path(args.output), "--output")
    for group in by_file.values():
        results = group[0].results
        samples = {s.task: read_samples(s) for s in group}
        try:
            written += export_run(results, samples, args.format, Path(args.output))
        except WriteError as exc:
            raise HarnessError(f"{exc}; the run's own files are untouched") from exc
    print(f"wrote {len(written)} files ({args.format}) under {args.output}")
    for path in written:
        print(f"  {path}")
    return 0
