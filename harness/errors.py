"""Errors the CLI turns into one clear line instead of a traceback."""

from __future__ import annotations


class HarnessError(Exception):
    """An error caused by the user's input or environment; its message is shown as one line."""


class TaskConfigError(HarnessError):
    """A task YAML file is malformed. The message names the file, the field and what was expected."""

    def __init__(self, file: str, field: str, expected: str) -> None:
        self.file, self.field, self.expected = file, field, expected
        super().__init__(f"{file}: field '{field}': {expected}")


class DataNotFoundError(HarnessError):
    """A data set is not where the harness looked; the message lists the places and how to point at a copy."""


class ModelLoadError(HarnessError):
    """A model could not be resolved or loaded."""
