"""What the subcommands' parsers share: the one-line usage error, the executor flags, values that start with a
sign, and the examples block every ``--help`` ends with.

Examples are written in one recognisable form, an ``examples:`` block of ``  harness ...`` lines in the parser's
epilog, so that a test (``tests/test_cli_help.py``) can collect every one of them and check that it parses and
that the tasks, scorers, model kinds and arguments it names exist: an example that stops working fails a test
instead of misleading a user.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from harness.errors import one_line
from harness.executors import EXECUTORS, ExecutorOptions
from harness.executors.base import PLACEMENT_SECONDS

#: First line of the examples block of a ``--help``; every following line that starts with ``  harness `` is one
#: example command.
EXAMPLES_HEADING = "examples:"
EXAMPLE_PREFIX = "  harness "

#: Options whose values may start with "-" (``--scorers -semantic``): argparse would read those as flags.
SIGNED_VALUE_OPTIONS = ("--scorers",)


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse, with a usage error reported as the one line every other input error is (exit status 2):
    ``error: argument --limit: invalid int value: 'abc' (see harness run --help)``. Subcommands inherit it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {one_line(message, 400)} (see {self.prog} --help)\n")


def examples(*commands: str) -> str:
    """The epilog of a ``--help``: ``commands`` (each a ``harness ...`` line) under :data:`EXAMPLES_HEADING`."""
    for command in commands:
        if not command.startswith(EXAMPLE_PREFIX.strip() + " "):
            raise ValueError(f"an example is a 'harness ...' command line, got {command!r}")
    return "\n".join([EXAMPLES_HEADING, *(f"  {command}" for command in commands)])


def add_command(
    sub: Any, name: str, help_text: str, example_lines: tuple[str, ...], **kwargs: Any
) -> argparse.ArgumentParser:
    """A subcommand's parser, its help ending with its examples (kept verbatim: one command per line)."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        description=kwargs.pop("description", help_text),
        epilog=examples(*example_lines),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )
    return parser


def batch_size(text: str) -> str:
    """``--batch-size``: a positive integer or ``auto``."""
    if text != "auto" and not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got '{text}'")
    return text


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that say where the model runs, shared by ``run`` and ``sweep``."""
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
    g.add_argument(
        "--placement-timeout",
        type=float,
        default=PLACEMENT_SECONDS,
        help=f"seconds a worker may wait to be placed before the run goes on without it (default {PLACEMENT_SECONDS})",
    )


def executor_options(args: argparse.Namespace) -> ExecutorOptions:
    return ExecutorOptions(
        name=args.executor,
        ray_address=args.ray_address,
        workers=args.workers,
        cpus_per_worker=args.cpus_per_worker,
        gpus_per_worker=args.gpus_per_worker,
        max_retries=args.max_retries,
        placement_timeout=args.placement_timeout,
    )


def join_signed_values(argv: list[str]) -> list[str]:
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


def split_names(text: str | None) -> list[str] | None:
    """A comma-separated list option (``--tasks provo,provo-paper``), blanks dropped; ``None`` when not given."""
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]
