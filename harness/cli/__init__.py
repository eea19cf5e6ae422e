"""The ``harness`` command line: run, sweep, import, score, leaderboard, ls, export, store, validate, plugins,
human-perplexity.

One module per group of subcommands, each adding its parsers and holding their handlers: ``running`` (run, sweep,
import), ``scoring`` (score), ``results`` (leaderboard, export), ``stores`` (store), ``registered`` (ls, validate,
plugins), ``human_perplexity``; ``parsing`` holds what they share (the one-line parser, the executor flags, the
examples block of a ``--help``), and ``app`` builds the parser and dispatches. Why split: each command group changes
for its own reasons, and a plugin author looking for what ``harness ls`` prints should find it in one short file.

Errors caused by input (a bad task file, missing data, an unknown model kind) are printed as one line on stderr
with exit status 2; anything else is a bug and keeps its traceback.
"""

from harness.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
