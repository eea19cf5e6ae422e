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

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from harness.errors import HarnessError, one_line, shorten, shorten_repr

#: The one boolean grammar (case-insensitive): anything else, the empty string included, is an error.
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")
#: The largest count any option takes (``positive_int``, ``non_negative_int``): samples, bins, splits, batch sizes.
#: Larger values are typos (``1e20``) that would pass here and crash, or run for ever, much later.
MAX_COUNT = 1_000_000


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
    # Only scalars are read as text: ``str`` of a container could be gigabytes (a YAML alias bomb).
    text = str(value).strip().lower() if isinstance(value, (str, int, float, np.generic)) else ""
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise ValueError(f"expected true or false, got {shorten_repr(value)}")


def _number(value: Any, what: str) -> int | float:
    """A finite number: NaN and infinities are refused everywhere (no option means anything by them)."""
    if isinstance(value, bool):
        raise ValueError(f"expected {what}, got a boolean")
    if isinstance(value, (int, np.integer)):
        if abs(int(value)) > 10**300:
            raise ValueError(f"expected {what} (a finite number), got {shorten_repr(value)}")
        return int(value)
    if isinstance(value, (float, np.floating)):
        got = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            got = float(text)
        except ValueError:
            raise ValueError(f"expected {what}, got {shorten_repr(value)}") from None
    else:
        raise ValueError(f"expected {what}, got {shorten_repr(value)}")
    if not math.isfinite(got):
        raise ValueError(f"expected {what} (a finite number), got {shorten_repr(value)}")
    return got


def integer(value: Any) -> int:
    """An integer; digit strings are accepted, booleans and fractions are not."""
    number = _number(value, "an integer")
    if isinstance(number, float):
        if not number.is_integer():
            raise ValueError(f"expected an integer, got {shorten_repr(value)}")
        number = int(number)
    return number


def _int_between(value: Any, low: int, high: int, wanted: str) -> int:
    try:
        got = integer(value)
    except ValueError:
        raise ValueError(f"expected {wanted}, got {shorten_repr(value)}") from None
    if got < low:
        raise ValueError(f"expected {wanted}, got {shorten_repr(value)}")
    if got > high:
        raise ValueError(f"expected {wanted} <= {high}, got {shorten_repr(value)}")
    return got


def positive_int(value: Any) -> int:
    """An integer from 1 to ``MAX_COUNT``.

    >>> positive_int("3"), positive_int(2.0)
    (3, 2)
    >>> positive_int("1e20")
    Traceback (most recent call last):
    ...
    ValueError: expected a positive integer <= 1000000, got '1e20'
    """
    return _int_between(value, 1, MAX_COUNT, "a positive integer")


def non_negative_int(value: Any) -> int:
    """An integer from 0 to ``MAX_COUNT``."""
    return _int_between(value, 0, MAX_COUNT, "an integer >= 0")


def int_range(low: int, high: int) -> Callable[[Any], int]:
    """An integer from ``low`` to ``high`` (both included); ``--options`` shows it as ``low <= int <= high``.

    >>> int_range(1, 20)("21")
    Traceback (most recent call last):
    ...
    ValueError: expected a positive integer <= 20, got '21'
    """
    wanted = "a positive integer" if low == 1 else "an integer >= 0" if low == 0 else f"an integer >= {low}"

    def convert(value: Any) -> int:
        return _int_between(value, low, high, wanted)

    convert.type_name = f"{low} <= int <= {high}"  # type: ignore[attr-defined]
    return convert


def number_range(
    low: float, high: float, *, low_open: bool = False, as_float: bool = False
) -> Callable[[Any], int | float]:
    """A finite number from ``low`` to ``high`` (``low`` excluded with ``low_open``); an integer stays an integer
    unless ``as_float``.

    >>> number_range(0, 3600)("1e9")
    Traceback (most recent call last):
    ...
    ValueError: expected a number from 0 to 3600, got '1e9'
    """
    wanted = f"a number {'above' if low_open else 'from'} {low:g} {'and at most' if low_open else 'to'} {high:g}"

    def convert(value: Any) -> int | float:
        got = _number(value, wanted)
        if not (low < got if low_open else low <= got) or not got <= high:
            raise ValueError(f"expected {wanted}, got {shorten_repr(value)}")
        return float(got) if as_float else got

    convert.type_name = f"{low:g} {'<' if low_open else '<='} number <= {high:g}"  # type: ignore[attr-defined]
    return convert


def non_negative_float(value: Any) -> float:
    """A finite number >= 0, as a float."""
    got = float(_number(value, "a number >= 0"))
    if not got >= 0:
        raise ValueError(f"expected a number >= 0, got {shorten_repr(value)}")
    return got


def number(value: Any) -> int | float:
    """A finite number; an integer stays an integer (so a recorded configuration shows what the user wrote)."""
    return _number(value, "a number")


def positive_number(value: Any) -> int | float:
    """A finite number > 0 (an integer stays an integer)."""
    got = _number(value, "a positive number")
    if not got > 0:
        raise ValueError(f"expected a positive number, got {shorten_repr(value)}")
    return got


def positive_float(value: Any) -> float:
    """A finite number > 0, as a float."""
    return float(positive_number(value))


def open_unit_float(value: Any) -> float:
    """A float strictly between 0 and 1 (a confidence level)."""
    got = float(_number(value, "a number in (0, 1)"))
    if not 0.0 < got < 1.0:
        raise ValueError(f"expected a number in (0, 1), got {shorten_repr(value)}")
    return got


def text(value: Any) -> str:
    """Any string (the empty one included)."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {shorten_repr(value)} ({type(value).__name__})")
    return value


def optional(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert``, or None for None (YAML ``null``)."""

    def check(value: Any) -> Any:
        return None if value is None else convert(value)

    check.type_name = f"{Option('', convert, None).type_name()} or null"  # type: ignore[attr-defined]
    return check


def or_auto(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert``, or the string ``auto`` (any case): a value the caller resolves later, e.g. per device.

    >>> or_auto(positive_int)("AUTO"), or_auto(positive_int)("4")
    ('auto', 4)
    """

    def check(value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        try:
            return convert(value)
        except ValueError as exc:
            raise ValueError(f"{exc} (or auto)") from None

    check.type_name = f"{Option('', convert, None).type_name()} or auto"  # type: ignore[attr-defined]
    return check


def one_of(*choices: Any) -> Callable[[Any], Any]:
    """One of ``choices`` exactly.

    >>> one_of("exact", "paper")("paper")
    'paper'
    """

    def check(value: Any) -> Any:
        if value in choices and not isinstance(value, bool):
            return value
        raise ValueError(f"expected one of {', '.join(repr(c) for c in choices)}, got {shorten_repr(value)}")

    check.type_name = " | ".join(str(c) for c in choices)  # type: ignore[attr-defined]
    return check


@dataclass(frozen=True)
class Option:
    """One option: ``convert`` turns a given value into the value used (or raises ValueError saying what it
    expected); ``default`` is used when the option is not given, as is (it is not converted)."""

    #: The key a task file, ``--task-args``, ``--model-args`` or a scorer's ``args`` gives it by.
    name: str
    #: Turns a given value (a YAML value, or a string from the command line) into the value used, or raises
    #: ``ValueError`` saying what it expected: ``positive_int``, ``boolean``, ``one_of("a", "b")``, ...
    convert: Callable[[Any], Any]
    #: The value used when the option is not given, as it is (never converted).
    default: Any
    #: One line for ``harness ls ... --options``.
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
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise OptionError(f"{where}: {noun} '{self.name}': {one_line(str(exc), 300)}") from None


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
            raise OptionError(f"{where}: unknown {noun} '{shorten(unknown[0], 60)}' (accepted: {accepted})")
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
        """One line per option: name, type, default (as a task file writes it, :func:`yaml_text`), help (what
        ``harness ls ... --options`` prints)."""
        return [f"{o.name}\t{o.type_name()}\tdefault {yaml_text(o.default)}\t{o.help}".rstrip() for o in self]


def yaml_text(value: Any) -> str:
    """``value`` as a user writes it in a task file: one line of YAML (flow style), which reads back as ``value``.

    ``None`` is ``null``, booleans ``true``/``false``, a tuple or list ``[a, b]``, a mapping ``{key: value}``, a
    string plain where YAML reads it back as that string and quoted where it would not (``'{source}'``, ``'\\n'``,
    ``''``). A dataclass default is shown in the form the option accepts: its ``given`` text where it keeps what a
    task file wrote (a generic loader's field: a column name or a template), else a mapping of the fields that
    differ from their own defaults.

    >>> [yaml_text(v) for v in (None, True, 0.95, "paper", "{source}", "", (1, 2), {"a": [None]})]
    ['null', 'true', '0.95', 'paper', "'{source}'", "''", '[1, 2]', '{a: [null]}']
    >>> print(yaml_text("{context}\\n"))
    "{context}\\n"
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, (int, float, str)):
        # Double quotes where the text holds a line break or another control character (``"\\n"``).
        style = '"' if isinstance(value, str) and not value.isprintable() else None
        dumped = yaml.safe_dump(value, default_style=style, width=math.inf, allow_unicode=True)
        return dumped.removesuffix("\n").removesuffix("\n...")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        given = getattr(value, "given", None)
        if isinstance(given, str):
            return yaml_text(given)
        changed = {
            f.name: getattr(value, f.name)
            for f in dataclasses.fields(value)
            if f.repr and getattr(value, f.name) != _field_default(f)
        }
        return yaml_text(changed)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{yaml_text(str(k))}: {yaml_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return "[" + ", ".join(yaml_text(v) for v in items) + "]"
    return yaml_text(str(value))


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


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
        key = key.strip()
        if not eq or not key:
            raise OptionError(f"{where}: expected key=value, got '{shorten(item.strip(), 60)}'")
        if key in out:
            raise OptionError(f"{where}: '{shorten(key, 60)}' is given twice")
        out[key] = value.strip()
    return out
