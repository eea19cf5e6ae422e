"""Analyses that stand apart from a run: they read their own inputs (a file of human judgments, say), load no model
and no task, and are reached only from the command line (``harness.cli``). Nothing in the run machinery (runner,
executors, kinds, stores, results, leaderboard) imports them.

Why inside ``harness`` and not beside the analysis scorers in ``scorers/``: those are scorers, registered through
the plugin hooks and run on a run's samples; these are commands, and the core (``harness.cli`` included) imports
no plugin package (``tests/test_plugins.py``).
"""
