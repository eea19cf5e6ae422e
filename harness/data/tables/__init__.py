"""Reading one data file's rows exactly as written: CSV and TSV cells as text, JSON values with the types the file
writes, Parquet through ``datasets``; every file that cannot be read is one line naming it and the cause.

Why in the core and not in the generic loaders' plugin package: the loaders (``plugins/loaders/generic/``) and the
commands that look at a user's file before any task exists (``harness data inspect``, :mod:`harness.data.inspection`)
must read the same cells the same way, and the commands import no built-in plugin (``tests/test_import_layers.py``).
"""
