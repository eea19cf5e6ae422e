"""The malformed-input corpus: every bad input the harness can be given, as data (``case.Case``).

Each module of this package holding a ``CASES`` list is one class of input (task YAML, data files, command-line
arguments, model arguments, ...); ``tests/test_malformed.py`` runs every case through ``harness.cli.main`` and checks
that it ends in exit status 2 and one short ``error: ...`` line naming the culprit.
"""
