"""The ``harness`` parser, built from each command group's parsers, and ``main``, which runs the chosen command and
turns input errors into one line on stderr (exit status 2)."""

from __future__ import annotations

import argparse
import sys

from harness import __version__
from harness.cli.collect import add_collect
from harness.cli.data_sets import add_data
from harness.cli.human_perplexity import add_human_perplexity
from harness.cli.parsing import OneLineArgumentParser, examples, join_signed_values
from harness.cli.registered import add_ls, add_plugins, add_validate
from harness.cli.results import add_export, add_leaderboard
from harness.cli.running import add_import, add_run, add_sweep
from harness.cli.scoring import add_score
from harness.cli.stores import add_store
from harness.errors import HarnessError

#: The subcommands in the order ``harness --help`` lists them.
SUBCOMMANDS = (
    add_run,
    add_sweep,
    add_import,
    add_score,
    add_leaderboard,
    add_ls,
    add_export,
    add_store,
    add_validate,
    add_data,
    add_plugins,
    add_human_perplexity,
    add_collect,
)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog="harness",
        description="Compare the variability of model outputs with human production variability.",
        epilog=examples(
            "harness run --tasks provo --model hf:smollm2-135m --limit 20",
            "harness leaderboard runs/hf__smollm2-135m runs/human -o leaderboards/provo",
        )
        + "\n\n'harness COMMAND --help' shows each command's options and examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(join_signed_values(list(sys.argv[1:] if argv is None else argv)))
    try:
        return int(args.handler(args))
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: responses received so far are saved; run the same command again to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
