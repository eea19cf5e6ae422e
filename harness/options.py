"""One way to declare and check options: task parameters, scorer arguments, model arguments and loader options.

Why one module: options arrive from YAML (typed values) and from the command line (``k=v`` strings), and a typo
found after an hour of model time is an hour lost. Every option set here rejects unknown keys by name with the
accepted list, reads booleans and numbers with one grammar, and describes itself for ``harness ls ... --options``.

>>> opts = Options(Option("n", positive_int, 10, "samples per input"), Option("greedy", boolean, False, "..."))
>>> opts.parse({"n": "40", "greedy": "yes"}, "--model-args")
{'n': 40, 'greedy': True}
>>> opts.parse({"m": 1}, "--model-args")
Traceback (most recent call last):
...
harness.options.OptionError: --model-args: unknown option 'm' (accepted: greedy, n)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import HarnessError

#: The one boolean grammar (case-insensitive): anything else, the empty string included, is an error.
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


class OptionError(HarnessError):
    """A bad or unknown option; the message names where it came from and the option."""


def boolean(value: Any) -> bool:
    """``true``/``false``; strings from the command line (``yes``, ``0``, ``on`` ...) are accepted.

    >>> boolean("Yes"), boolean(0)
    (True, False)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _number(value: Any, what: str) -> int | float:
    if isinstance(value, bool):
        raise ValueError(f"expected {what}, got a boolean")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected {what}, got {value!r}") from None
    raise ValueError(f"expected {what}, got {value!r}")


def integer(value: Any) -> int:
    """An integer; digit strings are accepted, booleans and fractions are not."""
    number = _number(value, "an integer")
    if isinstance(number, float):
        if not number.is_integer():
            raise ValueError(f"expected an integer, got {value!r}")
        number = int(number)
    return number


def _int_at_least(value: Any, low: int, wanted: str) -> int:
    try:
        got = integer(value)
    except ValueError:
        raise ValueError(f"expected {wanted}, got {value!r}") from None
    if got < low:
        raise ValueError(f"expected {wanted}, got {value!r}")
    return got


def positive_int(value: Any) -> int:
    """An integer >= 1.

    >>> positive_int("3"), positive_int(2.0)
    (3, 2)
    """
    return _int_at_least(value, 1, "a positive integer")


def non_negative_int(value: Any) -> int:
    """An integer >= 0."""
    return _int_at_least(value, 0, "an integer >= 0")


def non_negative_float(value: Any) -> float:
    """A number >= 0, as a float."""
    got = float(_number(value, "a number >= 0"))
    if not got >= 0:
        raise ValueError(f"expected a number >= 0, got {value!r}")
    return got


def number(value: Any) -> int | float:
    """A number; an integer stays an integer (so a recorded configuration shows what the user wrote)."""
    return _number(value, "a number")


def positive_number(value: Any) -> int | float:
    """A number > 0 (an integer stays an integer)."""
    got = _number(value, "a positive number")
    if not got > 0:
        raise ValueError(f"expected a positive number, got {value!r}")
    return got


def positive_float(value: Any) -> float:
    """A number > 0, as a float."""
    return float(positive_number(value))


def open_unit_float(value: Any) -> float:
    """A float strictly between 0 and 1 (a confidence level)."""
    got = float(_number(value, "a number in (0, 1)"))
    if not 0.0 < got < 1.0:
        raise ValueError(f"expected a number in (0, 1), got {value!r}")
    return got


def text(value: Any) -> str:
    """Any string (the empty one included)."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r} ({type(value).__name__})")
    return value


def optional(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert``, or None for None (YAML ``null``)."""

    def check(value: Any) -> Any:
        return None if value is None else convert(value)

    check.type_name = f"{Option('', convert, None).type_name()} or null"  # type: ignore[attr-defined]
    return check


def one_of(*choices: Any) -> Callable[[Any], Any]:
    """One of ``choices`` exactly.

    >>> one_of("exact", "paper")("paper")
    'paper'
    """

    def check(value: Any) -> Any:
        if value in choices and not isinstance(value, bool):
            return value
        raise ValueError(f"expected one of {', '.join(repr(c) for c in choices)}, got {value!r}")

    check.type_name = " | ".join(str(c) for c in choices)  # type: ignore[attr-defined]
    return check


@dataclass(frozen=True)
class Option:
    """One option: ``convert`` turns a given value into the value used (or raises ValueError saying what it
    expected); ``default`` is used when the option is not given, as is (it is not converted)."""

    name: str
    convert: Callable[[Any], Any]
    default: Any
    help: str = ""
    #: Shown instead of the converter's name in ``--options`` listings (``int``, ``0 < x <= 1``).
    type: str = ""

    def type_name(self) -> str:
        if self.type:
            return self.type
        if hasattr(self.convert, "type_name"):
            return str(self.convert.type_name)
        return {
            "boolean": "bool",
            "integer": "int",
            "positive_int": "int >= 1",
            "non_negative_int": "int >= 0",
            "non_negative_float": "float >= 0",
            "number": "number",
            "positive_number": "number > 0",
            "positive_float": "float > 0",
            "open_unit_float": "0 < float < 1",
            "text": "str",
        }.get(getattr(self.convert, "__name__", ""), "value")

    def check(self, value: Any, where: str, noun: str = "option") -> Any:
        try:
            return self.convert(value)
        except (ValueError, TypeError) as exc:
            raise OptionError(f"{where}: {noun} '{self.name}': {exc}") from None


class Options:
    """An ordered set of options. ``parse`` checks a mapping of given values and fills in the defaults."""

    def __init__(self, *options: Option) -> None:
        self.by_name: dict[str, Option] = {}
        for option in options:
            if option.name in self.by_name:
                raise ValueError(f"option '{option.name}' declared twice")
            self.by_name[option.name] = option

    def __iter__(self) -> Any:
        return iter(self.by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __len__(self) -> int:
        return len(self.by_name)

    def __or__(self, other: Options) -> Options:
        """Both sets; an option of ``other`` replaces one of the same name."""
        merged = {**self.by_name, **other.by_name}
        return Options(*merged.values())

    def names(self) -> list[str]:
        return list(self.by_name)

    def parse(
        self, given: Mapping[str, Any], where: str, *, defaults: bool = True, noun: str = "option"
    ) -> dict[str, Any]:
        """The converted values of ``given``, in declaration order, plus the defaults of the rest (``defaults``).

        An unknown key (the first in sorted order) or a bad value is an ``OptionError`` that begins with
        ``where`` and calls the key ``noun`` (option, argument).
        """
        unknown = sorted(str(key) for key in given if key not in self.by_name)
        if unknown:
            accepted = ", ".join(sorted(self.by_name)) or "none"
            raise OptionError(f"{where}: unknown {noun} '{unknown[0]}' (accepted: {accepted})")
        out: dict[str, Any] = {}
        for name, option in self.by_name.items():
            if name in given:
                out[name] = option.check(given[name], where, noun)
            elif defaults:
                out[name] = option.default
        return out

    def parse_arguments(self, given: Mapping[str, Any], owner: str) -> dict[str, Any]:
        """``parse`` worded for a constructor's keyword arguments (scorers, answer classifiers): ``{owner}: unknown
        argument 'x' (accepted: ...)`` and ``{owner}: argument 'x': ...``.

        >>> Options(Option("n", positive_int, 10)).parse_arguments({"m": 1}, "scorer 'tvd'")
        Traceback (most recent call last):
        ...
        harness.options.OptionError: scorer 'tvd': unknown argument 'm' (accepted: n)
        """
        return self.parse(given, owner, noun="argument")

    def describe(self) -> list[str]:
        """One line per option: name, type, default, help (what ``harness ls ... --options`` prints)."""
        return [f"{o.name}\t{o.type_name()}\tdefault {o.default!r}\t{o.help}".rstrip() for o in self]


def parse_key_values(text: str | None, where: str) -> dict[str, str]:
    """``k=v,k2=v2`` as strings (values are converted by the option set that reads them).

    >>> parse_key_values("dtype=bfloat16, max_batch=8", "--model-args")
    {'dtype': 'bfloat16', 'max_batch': '8'}
    """
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise OptionError(f"{where}: expected key=value, got '{item}'")
        out[key.strip()] = value.strip()
    return out
