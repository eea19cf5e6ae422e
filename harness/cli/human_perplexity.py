"""``harness human-perplexity``: a human's perplexity estimated from a file of relative judgments
(``harness.analyses.relative_judgments``, docs/human-perplexity.md). No model and no task are involved."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.parsing import add_command


def add_human_perplexity(sub: Any) -> None:
    p = add_command(
        sub,
        "human-perplexity",
        "estimate a human's perplexity from relative judgments (docs/human-perplexity.md)",
        (
            "harness human-perplexity rounds.jsonl",
            "harness human-perplexity rounds.jsonl --rounded --json estimate.json",
        ),
    )
    p.add_argument("rounds", help="a JSON-lines file of judged rounds")
    p.add_argument(
        "--rounded", action="store_true", help="map each judgment to the nearest allowed answer (1%%, 10%%, ..., 99%%)"
    )
    p.add_argument("--json", metavar="OUT", help="also write the estimate (overall and per position) to this JSON file")
    p.set_defaults(handler=cmd_human_perplexity)


def cmd_human_perplexity(args: argparse.Namespace) -> int:
    from harness.analyses.relative_judgments import command

    return command(Path(args.rounds), rounded=args.rounded, json_out=Path(args.json) if args.json else None)
