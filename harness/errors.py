"""Errors the CLI turns into one clear line instead of a traceback."""

from __future__ import annotations

import reprlib


class HarnessError(Exception):
    """An error caused by the user's input or environment; its message is shown as one line."""


class TaskConfigError(HarnessError):
    """A task YAML file is malformed. The message names the file, the field and what was expected."""

    def __init__(self, file: str, field: str, expected: str) -> None:
        self.file, self.field, self.expected = file, field, expected
        super().__init__(f"{file}: field '{field}': {expected}")


class TaskConfigErrors(TaskConfigError):
    """Several problems in one task file, reported together so that a user fixes them in one go; the first one
    is also this error's ``file``, ``field`` and ``expected``."""

    def __init__(self, errors: list[TaskConfigError]) -> None:
        self.errors = errors
        first = errors[0]
        self.file, self.field, self.expected = first.file, first.field, first.expected
        listed = "; ".join(f"field '{e.field}': {e.expected}" for e in errors)
        HarnessError.__init__(self, f"{first.file}: {len(errors)} problems: {listed}")


class DataNotFoundError(HarnessError):
    """A data set is not where the harness looked; the message lists the places and how to point at a copy."""


class ModelLoadError(HarnessError):
    """A model could not be resolved or loaded."""


def shorten(value: object, limit: int = 80) -> str:
    """``value`` as text for an error message, cut to ``limit`` characters: a message echoes what the user gave,
    never megabytes of it. A string is shown as it is; anything else as a bounded repr (``shorten_repr``).

    >>> shorten("x" * 100, 10)
    'xxxxxxxxx… (100 characters)'
    """
    if not isinstance(value, str):
        return shorten_repr(value, limit)
    if len(value) <= limit:
        return value
    return f"{value[: limit - 1]}… ({len(value)} characters)"


def shorten_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for echoing a user's value (strings quoted, so ``'5'`` and
    ``5`` differ). The value is never walked in full: a YAML alias bomb is a list of a billion items that share a few
    objects, and a 5,000-digit integer cannot even be printed.

    >>> shorten_repr("abc"), shorten_repr(7), shorten_repr(1e20), shorten_repr(None)
    ("'abc'", '7', '1e+20', 'None')
    >>> shorten_repr("x" * 1000, 20)
    "'xxxxxxxxxxxxxxxxxx… (1002 characters)"
    >>> shorten_repr(10**5000)
    'an integer of 5001 digits'
    """
    if isinstance(value, bool) or value is None or isinstance(value, float):
        text = repr(value)
    elif isinstance(value, int):
        digits = len(str(abs(value))) if abs(value) < 10**4000 else int(value.bit_length() * 0.30103) + 1
        text = repr(value) if digits <= limit else f"an integer of {digits} digits"
    elif isinstance(value, (str, bytes)):
        text = repr(value[: 2 * limit])
        if len(value) > 2 * limit:
            return f"{text[: limit - 1]}… ({len(repr(value[:0])) + len(value)} characters)"
    else:
        bounded = reprlib.Repr()
        bounded.maxlevel = 3
        bounded.maxlist = bounded.maxtuple = bounded.maxset = bounded.maxfrozenset = bounded.maxdict = 6
        bounded.maxstring = bounded.maxother = bounded.maxlong = max(limit, 12)
        text = bounded.repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}… ({len(text)} characters)"


def one_line(text: str, limit: int = 400) -> str:
    """``text`` with line breaks and runs of whitespace collapsed to one space, cut to ``limit`` characters: what
    a message may quote of a parser's own explanation or of a line of a file.

    >>> one_line("a  b    c")
    'a b c'
    """
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
