"""Every example in every ``--help`` is a command that works: it parses, and the tasks, scorers, model kinds, model
arguments, task arguments and replay formats it names exist (``harness.cli.parsing`` writes examples as an
``examples:`` block of ``  harness ...`` lines, which is what this test collects).

Why: a help text is the first documentation a user copies from, and an example that names a scorer that was
renamed (``+lexical_variability``, the scorer being ``lexical``) fails with an error the user cannot place.
Paths in examples (run folders, plan files, rounds files) are the user's own and are not looked for, except task
files, which must exist in the repository.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from harness.cli import build_parser
from harness.cli.parsing import EXAMPLE_PREFIX, EXAMPLES_HEADING, join_signed_values, split_names
from harness.registry.manager import Registry, get_registry
from harness.registry.task_loading import check_against_registry, registered_or_path, resolve_tasks, task_path
from harness.registry.task_validation import load_task_file
from harness.run.sweep import pair_model_args, parse_model
from harness.task_config import parse_task_args
from tests.conftest import run_main
from tests.helpers import REPO, run_cli


def subcommands() -> list[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def help_examples(*command: str) -> list[str]:
    """The example lines of ``harness COMMAND --help``, as printed (without the two-space indent)."""
    result = run_main(*command, "--help")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert EXAMPLES_HEADING in lines, f"harness {' '.join(command)} --help has no '{EXAMPLES_HEADING}' block"
    block = lines[lines.index(EXAMPLES_HEADING) + 1 :]
    return [line.strip() for line in block if line.startswith(EXAMPLE_PREFIX)]


def all_examples() -> list[tuple[str, str]]:
    """(the help it came from, the example) for the top-level help and every subcommand's."""
    found = [("harness", example) for example in help_examples()]
    for name in subcommands():
        found += [(name, example) for example in help_examples(name)]
    return found


@contextmanager
def in_repo() -> Iterator[None]:
    """Task-file examples are relative to the repository root, as the docs' commands are."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        yield


def check_tasks(args: argparse.Namespace, registry: Registry) -> None:
    """Every task named resolves, and with the example's --task-args every task and scorer argument checks."""
    names = split_names(getattr(args, "tasks", None)) or []
    if getattr(args, "task", None):
        names.append(args.task)
    if args.command == "score":
        for name in names:
            task_path(name, registry)
        return
    if names:
        resolve_tasks(names, parse_task_args(getattr(args, "task_args", None)), registry)


def check_models(args: argparse.Namespace, registry: Registry) -> None:
    """Each --model's kind is registered and its --model-args are options the adapter takes."""
    models = getattr(args, "model", None) or []
    for text, margs in zip(models, pair_model_args(models, getattr(args, "model_args", None)), strict=True):
        spec = parse_model(text, margs, args.device, args.batch_size)
        registry.model(spec.kind).options.parse(spec.args, f"--model {text}")
    if args.command == "import":
        given = {"format": args.format, **({"setting": args.setting} if args.setting else {})}
        registry.model("replay").options.parse(given, "harness import")


def check_scorers(args: argparse.Namespace, registry: Registry) -> None:
    """``score``: each +NAME/-NAME/NAME is a registered scorer that can score the named tasks, and each
    SCORER.KEY of --task-args is an argument that scorer takes."""
    if args.command != "score":
        return
    kinds = {load_task_file(task_path(t, registry)).request for t in split_names(args.tasks) or []}
    for item in (args.scorers or "").split(","):
        name = item.strip().lstrip("+-")
        cls = registry.scorer(name)
        assert not cls.request_kinds or kinds <= set(cls.request_kinds), f"scorer '{name}' cannot score {kinds}"
    for key in parse_task_args(args.task_args):
        scorer, _, option = key.partition(".")
        assert option in registry.scorer(scorer).options.names(), f"--task-args {key}: no such scorer argument"


def check_validate(args: argparse.Namespace, registry: Registry) -> None:
    for given in args.files if args.command == "validate" else []:
        check_against_registry(load_task_file(registered_or_path(given, registry, "validate")), registry)


def check_example(example: str) -> None:
    argv = shlex.split(example)
    assert argv[0] == "harness"
    try:
        args = build_parser().parse_args(join_signed_values(argv[1:]))
    except SystemExit as exc:
        raise AssertionError(f"does not parse (exit {exc.code})") from None
    registry = get_registry()
    with in_repo():
        for check in (check_tasks, check_models, check_scorers, check_validate):
            check(args, registry)


EXAMPLES = all_examples()


def test_every_command_shows_examples() -> None:
    shown = {where for where, _ in EXAMPLES}
    assert shown == {"harness", *subcommands()}
    assert len(EXAMPLES) >= 2 * len(subcommands())


@pytest.mark.parametrize(("where", "example"), EXAMPLES, ids=[f"{w}:{i}" for i, (w, _) in enumerate(EXAMPLES)])
def test_help_example_parses_and_names_what_exists(where: str, example: str) -> None:
    check_example(example)
    assert where == "harness" or shlex.split(example)[1] == where, f"an example of '{where}' runs another command"


@pytest.mark.parametrize(
    ("example", "problem"),
    [
        ("harness score runs/x --scorers +lexical_variability,-ece", "unknown scorer 'lexical_variability'"),
        ("harness score runs/x --tasks provo --scorers +lexical", "cannot score"),
        ("harness run --tasks provoo --human-only", "unknown task 'provoo'"),
        ("harness run --tasks provo --model hf:smollm2-135m --model-args dtyp=bfloat16", "unknown option 'dtyp'"),
        ("harness run --tasks provo --human-only --task-args ece.n_binz=15", "n_binz"),
        ("harness run --tasks provo --human-only --limt 3", "does not parse"),
        ("harness import out.jsonl --task provo --name x --format provo-gpt3", "provo-gpt3"),
        ("harness validate provoo", "unknown task 'provoo'"),
    ],
)
def test_a_broken_example_is_caught(example: str, problem: str) -> None:
    """The checks are not vacuous: the trap-7 example and its siblings fail, naming what is wrong."""
    with pytest.raises(Exception, match=problem.replace("+", r"\+")):
        check_example(example)


def test_score_help_suggests_a_scorer_that_exists() -> None:
    """Trap 7: ``harness score --help`` suggested ``+lexical_variability``; the scorer is ``lexical``."""
    assert "lexical_variability" not in run_main("score", "--help").stdout
    assert "lexical_variability" not in (REPO / "harness" / "run" / "rescoring.py").read_text()


def test_the_entry_points_still_reach_main() -> None:
    """``harness`` (pyproject's ``harness.cli:main``) and ``python -m harness`` run the same ``main``."""
    import harness.__main__ as module_entry

    scripts = (REPO / "pyproject.toml").read_text().split("[project.scripts]", 1)[1]
    module, attr = re.findall(r'^harness = "([\w.]+):(\w+)"$', scripts, flags=re.M)[0]
    assert getattr(importlib.import_module(module), attr) is module_entry.main
    assert run_cli("--version").stdout.startswith("harness ")
