"""The ``harness`` command line: run, sweep, score, leaderboard, import, export, ls, validate, plugins,
human-perplexity.

Errors caused by input (a bad task file, missing data, an unknown model kind) are printed as one line on stderr
with exit status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from harness import __version__
from harness.errors import HarnessError, TaskConfigError, one_line
from harness.executors import EXECUTORS, ExecutorOptions
from harness.files import WriteError, ensure_output_dir
from harness.importing import import_options
from harness.locking import OutputLock
from harness.options import Options
from harness.plugins import get_registry
from harness.rescoring import rescore
from harness.results import format_table
from harness.run_dir import MERGED, TaskSource, latest_invocation, read_samples, task_sources
from harness.runner import RunOptions, run
from harness.store import repair, scan
from harness.sweep import pair_model_args, parse_model, read_plan, run_all
from harness.task_config import load_task_file, parse_task_args
from harness.task_loading import check_against_registry


def _batch_size(text: str) -> str:
    if text != "auto" and not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got '{text}'")
    return text


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse, with a usage error reported as the one line every other input error is (exit status 2):
    ``error: argument --limit: invalid int value: 'abc' (see harness run --help)``. Subcommands inherit it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {one_line(message, 400)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog="harness", description="Compare the variability of model outputs with human production variability."
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="evaluate a model (or only the human reference) on tasks")
    p.add_argument("--tasks", required=True, help="comma-separated task names or task YAML paths")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--model",
        action="append",
        help="KIND:NAME, e.g. hf:smollm2-135m, hf:gpt2, hf:/path/to/model; repeat it to run several models",
    )
    group.add_argument(
        "--human-only",
        action="store_true",
        help="compute only the human reference numbers (human variability and controls, human ECE, top-1); no model",
    )
    p.add_argument(
        "--model-args",
        action="append",
        help="k=v,... passed to the model adapter (e.g. dtype=bfloat16); once for every --model, or once for each",
    )
    p.add_argument("--task-args", help="k=v,... overriding task params (n_samples=40) or scorer args (ece.n_bins=15)")
    p.add_argument("--limit", type=int, help="evaluate only the first N instances of each task")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    p.add_argument("--output-dir", default="runs", help="where results go (default ./runs)")
    p.add_argument("--data-dir", help="data root (default: $HARNESS_DATA_DIR, else the user cache directory)")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto")
    p.add_argument("--batch-size", type=_batch_size, default="auto", help="N or auto")
    p.add_argument("--full-table", action="store_true", help="print every metric, not only the headline table")
    _add_executor_arguments(p)

    p = sub.add_parser("sweep", help="run every model of a run-plan YAML file over its tasks (docs/distributed.md)")
    p.add_argument("plan", help="the plan: tasks, task_args, models (each KIND:NAME with its model_args), output_dir")
    p.add_argument("--data-dir", help="data root (default: the plan's data_dir, else $HARNESS_DATA_DIR, else cache)")
    p.add_argument("--full-table", action="store_true", help="print every metric, not only the headline table")
    _add_executor_arguments(p)

    p = sub.add_parser(
        "import", help="score outputs made elsewhere (a JSON Lines file, or a paper's released generations) as a model"
    )
    p.add_argument("source", help="the outputs file or folder (relative paths are also looked up in the data folder)")
    p.add_argument("--task", required=True, help="the task the outputs answer (a task name or YAML file)")
    p.add_argument("--name", required=True, help="the system's name in results and leaderboards, e.g. bloom-40")
    p.add_argument(
        "--format", default="auto", help="jsonl, provo-gpt2, provo-bloom, provo-chatgpt, ... (default: auto)"
    )
    p.add_argument(
        "--setting", help="which of a file's settings to read (provo-chatgpt: unbiased_temp_1, diverse, ...)"
    )
    p.add_argument("--task-args", help="k=v,... as for harness run (mode=paper; ece.n_bins=15)")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0): the human splits and bootstraps")
    p.add_argument("--output-dir", default="runs", help="where results go (default ./runs)")
    p.add_argument("--data-dir", help="data root (default: $HARNESS_DATA_DIR, else the user cache directory)")
    p.add_argument("--full-table", action="store_true", help="print every metric, not only the headline table")

    p = sub.add_parser("score", help="score a finished run's saved outputs again (no model is loaded)")
    p.add_argument(
        "target", help="a run folder, one of its results files, or one of its samples_<task>_<date>.jsonl files"
    )
    p.add_argument(
        "--scorers",
        help="an exact list (tvd,entropy; recorded arguments kept) or changes to the run's (+lexical_variability,-ece)",
    )
    p.add_argument("--task-args", help="scorer.key=value,... overriding scorer arguments (ece.n_bins=15)")
    p.add_argument("--tasks", help="comma-separated tasks of the run to score (default: all)")
    p.add_argument("--output-dir", help="where the new results go (default: RUN_DIR/rescored)")
    p.add_argument("--data-dir", help="data root (default: the run's, else $HARNESS_DATA_DIR, else the user cache)")
    p.add_argument("--full-table", action="store_true", help="print every metric, not only the headline table")

    p = sub.add_parser("leaderboard", help="fold results.json files into a leaderboard: JSON, an HTML page, PNG plots")
    p.add_argument("results", nargs="+", help="run folders or results files (human-only runs included)")
    p.add_argument("-o", "--output", required=True, help="the leaderboard's folder, e.g. leaderboards/NAME")
    p.add_argument(
        "--allow-mixed",
        action="store_true",
        help="merge results that are not comparable (task version, data hash, instances, samples per input), marked",
    )
    p.add_argument("--no-plots", action="store_true", help="write no PNG figures (the page then shows none)")

    p = sub.add_parser("ls", help="list registered tasks, scorers, model kinds, loaders, classifiers or request kinds")
    p.add_argument("what", choices=LISTABLE)
    p.add_argument("--options", action="store_true", help="also print each one's options: name, type, default and help")

    p = sub.add_parser("export", help="write a finished run in another tool's format (lm-eval, inspect)")
    p.add_argument("target", help="a run folder or one of its results files")
    p.add_argument(
        "--format", required=True, choices=EXPORT_FORMATS, help="lm-eval: results and samples files; inspect: eval logs"
    )
    p.add_argument("-o", "--output", required=True, help="folder to write the export into")

    p = sub.add_parser("store", help="check or repair response stores (the files under <run>/responses/)")
    p.add_argument("action", choices=("check", "repair"), help="check: list problems; repair: fix what can be fixed")
    p.add_argument("paths", nargs="+", help="store files, or run folders (every store under responses/)")

    p = sub.add_parser("validate", help="check task YAML files against the schema and the installed plugins")
    p.add_argument("files", nargs="+")

    sub.add_parser("plugins", help="list loaded plugins and what they register")

    p = sub.add_parser(
        "human-perplexity", help="estimate a human's perplexity from relative judgments (docs/human-perplexity.md)"
    )
    p.add_argument("rounds", help="a JSON-lines file of judged rounds")
    p.add_argument(
        "--rounded", action="store_true", help="map each judgment to the nearest allowed answer (1%%, 10%%, ..., 99%%)"
    )
    p.add_argument("--json", metavar="OUT", help="also write the estimate (overall and per position) to this JSON file")
    return parser


def _add_executor_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where the model runs (docs/distributed.md)")
    g.add_argument("--executor", choices=EXECUTORS, default="local", help="local (this machine) or ray (a Ray cluster)")
    g.add_argument("--ray-address", help="the Ray cluster to join: auto, HOST:PORT (default: start one here)")
    g.add_argument(
        "--workers",
        type=int,
        help="processes (local; default: none, this one) or Ray actors (default: fill the cluster) holding the model",
    )
    g.add_argument(
        "--cpus-per-worker", type=float, default=1.0, help="CPUs, and torch threads, each worker gets (default 1)"
    )
    g.add_argument("--gpus-per-worker", type=float, help="GPUs per worker (default: 1 if the cluster has GPUs)")
    g.add_argument("--max-retries", type=int, default=3, help="times a block is resent after its worker died")


def _executor_options(args: argparse.Namespace) -> ExecutorOptions:
    return ExecutorOptions(
        name=args.executor,
        ray_address=args.ray_address,
        workers=args.workers,
        cpus_per_worker=args.cpus_per_worker,
        gpus_per_worker=args.gpus_per_worker,
        max_retries=args.max_retries,
    )


def cmd_run(args: argparse.Namespace) -> int:
    if args.human_only and args.model_args:
        raise HarnessError("--model-args: not used with --human-only")
    executor = _executor_options(args)
    base = RunOptions(
        tasks=[t.strip() for t in args.tasks.split(",") if t.strip()],
        model=None,
        task_args=parse_task_args(args.task_args),
        limit=args.limit,
        seed=args.seed,
        output_dir=Path(args.output_dir),
        data_dir=args.data_dir,
        executor=executor,
    )
    if args.human_only:
        plan = [base]
    else:
        pairs = zip(args.model, pair_model_args(args.model, args.model_args), strict=True)
        plan = [replace(base, model=parse_model(text, margs, args.device, args.batch_size)) for text, margs in pairs]
    return _run_plan(plan, args.full_table)


def cmd_sweep(args: argparse.Namespace) -> int:
    plan = read_plan(Path(args.plan), _executor_options(args))
    if args.data_dir:
        plan = [replace(options, data_dir=args.data_dir) for options in plan]
    return _run_plan(plan, args.full_table)


def _run_plan(plan: list[RunOptions], full: bool) -> int:
    """One run, or several (a sweep); with several, each run's table is headed by its model."""
    several = len(plan) > 1

    def report(options: RunOptions, results: dict) -> None:
        if several:
            print(f"\n== {options.model.label if options.model else 'human-only'} ==")
        print(format_table(results, full=full))
        out_dir = options.run_dir
        print(f"\nwrote {latest_invocation(out_dir)} (every task's latest result: {out_dir / MERGED})")

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
    out_dir = options.run_dir
    print(f"\nwrote {latest_invocation(out_dir)} (every task's latest result: {out_dir / MERGED})")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    results, path = rescore(
        Path(args.target),
        output_dir=Path(args.output_dir) if args.output_dir else None,
        scorers=args.scorers,
        scorer_args=parse_task_args(args.task_args),
        tasks=[t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None,
        data_dir=args.data_dir,
    )
    print(format_table(results, full=args.full_table))
    print(f"\nwrote {latest_invocation(path.parent)} (every task's latest result: {path})")
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


def _store_files(paths: list[str]) -> list[Path]:
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


def cmd_store(args: argparse.Namespace) -> int:
    bad = 0
    for path in _store_files(args.paths):
        if args.action == "check":
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
            bad += bool(found.problems)
        else:
            with OutputLock(path.parent.parent):
                found, backup = repair(path)
            if backup is None:
                print(f"ok: {path}: nothing to repair")
            else:
                moved = f"{len(found.rejected)} conflicting records moved to {path.name}.rejected.jsonl"
                rejected = f", {moved}" if found.rejected else ""
                print(f"repaired: {path}: {len(found.records)} instances kept{rejected}; original kept as {backup}")
    return 2 if bad else 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from harness.leaderboard import build

    output = Path(args.output)
    ensure_output_dir(output, "-o")
    board = build([Path(p) for p in args.results], output, allow_mixed=args.allow_mixed, plots=not args.no_plots)
    rows = sum(1 for s in board["systems"] if s["kind"] == "model")
    print(f"{rows} systems, {len(board['tasks'])} tasks ({', '.join(board['tasks'])})")
    for mixed in board["mixed"]:
        why = "; ".join(mixed["differs"])
        print(f"warning: merged although not comparable: {mixed['task']}: {mixed['source']}: {why}")
    plots = len(board["files"].get("plots", []))
    print(f"wrote {output / 'leaderboard.json'}, {output / board['files']['html']} and {plots} plots")
    return 0


#: ``harness export --format`` choices (``harness.exports.FORMATS``, imported only when exporting).
EXPORT_FORMATS = ("lm-eval", "inspect")

LISTABLE = ("tasks", "scorers", "models", "loaders", "classifiers", "kinds")


def _options_of(what: str, name: str) -> Options:
    """The options a registered object takes: a task's request parameters (with the task file's values as
    defaults), a scorer's or classifier's arguments, a model's ``--model-args``, a loader's data options."""
    registry = get_registry()
    if what == "tasks":
        config = load_task_file(Path(str(registry.tasks[name].obj)))
        params = registry.kind(config.request).params
        return Options(*(replace(o, default=config.params.get(o.name, o.default)) for o in params))
    if what == "kinds":
        return registry.kind(name).params
    if what == "models":
        return registry.model(name).options
    obj = {"scorers": registry.scorers, "loaders": registry.loaders, "classifiers": registry.classifiers}[what][name]
    return getattr(obj.obj, "options", None) or Options()


def cmd_ls(args: argparse.Namespace) -> int:
    registry = get_registry()
    table = {
        "tasks": registry.tasks,
        "scorers": registry.scorers,
        "models": registry.models,
        "loaders": registry.loaders,
        "classifiers": registry.classifiers,
        "kinds": registry.kinds,
    }
    for name, reg in sorted(table[args.what].items()):
        print(f"{name}\t{reg.plugin}")
        if args.options:
            for line in _options_of(args.what, name).describe() or ["(no options)"]:
                print(f"    {line}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    registry = get_registry()
    failed = 0
    for file in args.files:
        try:
            config = load_task_file(Path(file))
            check_against_registry(config, registry)
        except TaskConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
        else:
            print(f"ok: {file} (task {config.task}, version {config.version})")
    return 2 if failed else 0


def cmd_plugins(args: argparse.Namespace) -> int:
    print(json.dumps(get_registry().plugins, indent=2))
    return 0


def cmd_human_perplexity(args: argparse.Namespace) -> int:
    from harness.relative_judgments import command

    return command(Path(args.rounds), rounded=args.rounded, json_out=Path(args.json) if args.json else None)


#: Options whose values may start with "-" (``--scorers -semantic``): argparse would read those as flags.
SIGNED_VALUE_OPTIONS = ("--scorers",)


def _join_signed_values(argv: list[str]) -> list[str]:
    """``--scorers -semantic`` -> ``--scorers=-semantic`` so argparse takes the value as a value."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in SIGNED_VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1][:1] in ("-", "+"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(_join_signed_values(list(sys.argv[1:] if argv is None else argv)))
    commands = {
        "run": cmd_run,
        "sweep": cmd_sweep,
        "import": cmd_import,
        "score": cmd_score,
        "leaderboard": cmd_leaderboard,
        "ls": cmd_ls,
        "export": cmd_export,
        "store": cmd_store,
        "validate": cmd_validate,
        "plugins": cmd_plugins,
        "human-perplexity": cmd_human_perplexity,
    }
    try:
        return commands[args.command](args)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: responses received so far are saved; run the same command again to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
