"""The limits of time, size and depth a task file's templates render under, and the checks that enforce them.

``jinja2.sandbox.ImmutableSandboxedEnvironment`` keeps a template away from Python's internals, but not from the
machine's memory and time: ``{{ 'a' * 10**9 }}`` builds a gigabyte, two nested ``range(100000)`` loops run for
hours, and a macro that calls itself ends in a ``RecursionError`` with a traceback of a thousand lines. A task file
is data, so every render here runs under the limits below, and a template that passes one stops with a
``TemplateLimitExceeded`` saying which (``fields.Field.value`` turns it into one line naming the field and row).

How each limit is enforced:

- **Steps** (``MAX_TEMPLATE_STEPS``) and **time** (``MAX_TEMPLATE_SECONDS``): every call, filter, test, intercepted
  operator and loop iteration is a step of the render's ``Budget`` (every ``{% for %}`` is rewritten to iterate
  through ``guard_iter``); the clock is read every ``CLOCK_EVERY`` steps.
- **Depth** (``MAX_TEMPLATE_DEPTH``): calls nested inside calls (a macro calling a macro, a recursive loop);
  a ``RecursionError`` that still happens is caught by the caller.
- **Size** (``MAX_TEMPLATE_SIZE``, ``MAX_TEMPLATE_INT_BITS``, ``MAX_TEMPLATE_BUILT``): the operations that multiply
  sizes are refused *before* they run when their result would be too large (``*`` and ``**``, ``%`` and
  ``format``, ``join``, ``replace``, ``ljust``/``center``/``zfill``/``expandtabs``/``translate``, the ``center``,
  ``indent``, ``wordwrap``, ``batch`` and ``slice`` filters); every value an operation returns is then counted
  against the size of one value and the total a render may build (``charge``); a value that is not text is weighed
  (the length of its text, counted without building it) before anything turns it into text (output, ``~``, text
  filters), so a list of a million references to one long string cannot become a terabyte of output; the output
  pieces are counted before they are joined; and ``range`` is capped.

``sandbox`` is the Jinja2 environment that calls these checks. Normal templates (a passage's first words, a list of
references) run a handful of steps, far below every limit.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from jinja2.runtime import Namespace, Undefined

#: Steps (calls, filters, tests, ``*``/``**``/``+``/``%`` operators, loop iterations) one render may take. A
#: normal template takes a few dozen; a million is about a second of pure overhead, so a template looping over
#: two ``range(100000)`` stops within a second instead of running for hours.
MAX_TEMPLATE_STEPS = 1_000_000
#: Wall-clock seconds one render may take, for steps that are individually slow (sorting a long list in a
#: loop). A normal render takes microseconds; two seconds is far above it even on a loaded machine.
MAX_TEMPLATE_SECONDS = 2.0
#: The clock is read every this many steps (reading it every step would double the cost of a step).
CLOCK_EVERY = 256
#: Calls nested inside calls (a macro calling a macro, ``loop(...)`` of a recursive loop). Each level is a few
#: Python frames, so 50 levels stay well inside Python's recursion limit wherever the render is called from;
#: a template over one row has no use for deeper recursion.
MAX_TEMPLATE_DEPTH = 50
#: The longest value a template may build: characters of a text, items of a list or mapping; and the most
#: characters one render's output may have. A million characters is far beyond any model's context and any
#: list of human responses for one row, and small enough (megabytes) to be harmless.
MAX_TEMPLATE_SIZE = 1_000_000
#: The largest integer a template may build, in bits (about 3,000 digits): ``10 ** 10**9`` would take minutes
#: and gigabytes, and Python cannot print an integer of more than 4,300 digits anyway.
MAX_TEMPLATE_INT_BITS = 10_000
#: The total size (as ``MAX_TEMPLATE_SIZE`` counts it) of all values one render builds: one value may have a
#: million characters, but a loop must not build a thousand of them (gigabytes).
MAX_TEMPLATE_BUILT = 20 * MAX_TEMPLATE_SIZE
#: The longest ``range`` a template may make (Jinja2's sandbox allows 100,000): a row's words or options are
#: far fewer, and the step limit bounds loops over several ranges anyway.
MAX_TEMPLATE_RANGE = 10_000

_TEXT_TYPES = (str, bytes)
_SEQUENCE_TYPES = (str, bytes, list, tuple)
_SIZED_TYPES = (str, bytes, list, tuple, dict, set, frozenset)
#: Filters that take a list and do not turn it into text (the others stringify a non-text value first, so it is
#: weighed before they run).
_LIST_FILTER_NAMES = (
    "abs attr batch bool count d default dictsort first float groupby int items join last length "
    "list map max min random reject rejectattr reverse round safe select selectattr slice sort sum unique"
)
LIST_FILTERS = frozenset(_LIST_FILTER_NAMES.split())
_DIGITS = re.compile(r"\d+")
#: A ``%`` conversion's width and precision (``%-10.3f``).
_PERCENT = re.compile(r"%[-+ #0]*(\d*)(?:\.(\d*))?")
#: A ``{}`` field's format spec (``{0:>12}``), and a spec with a nested field (``{:{width}}``).
_BRACE_SPEC = re.compile(r"\{[^{}:]*:([^{}]*)\}")
_NESTED_SPEC = re.compile(r"\{[^{}]*\{")


class TemplateLimitExceeded(Exception):
    """A render passed one of the limits; the message says which (``fields.Field.value`` adds the field and row).

    Not a ``jinja2.TemplateError``: nothing in Jinja2 or in the loaders mistakes it for a template's own error.
    """


class Budget:
    """What one render has spent: steps, nesting depth, the size of what it built, and its deadline."""

    __slots__ = ("built", "deadline", "depth", "steps")

    def __init__(self) -> None:
        self.steps = 0
        self.depth = 0
        self.built = 0
        self.deadline = time.monotonic() + MAX_TEMPLATE_SECONDS

    def step(self) -> None:
        """Count one step; every ``CLOCK_EVERY`` steps, check the step count and the clock."""
        self.steps += 1
        if not self.steps % CLOCK_EVERY:
            self.tick()

    def tick(self) -> None:
        if self.steps > MAX_TEMPLATE_STEPS:
            raise TemplateLimitExceeded(
                f"more than {MAX_TEMPLATE_STEPS:,} steps (calls, operators, loop iterations; "
                "MAX_TEMPLATE_STEPS): a loop too long for a template over one row?"
            )
        if time.monotonic() > self.deadline:
            raise TemplateLimitExceeded(f"ran for more than {MAX_TEMPLATE_SECONDS:g} s (MAX_TEMPLATE_SECONDS)")


state = threading.local()


def current_budget() -> Budget | None:
    """The budget of the render in progress on this thread (None outside a render: constant folding at compile
    time, which runs no loops, still gets the size checks)."""
    return getattr(state, "budget", None)


def too_large(what: str, size: int, unit: str = "characters or items") -> TemplateLimitExceeded:
    return TemplateLimitExceeded(
        f"{what} would build a value of {size:,} {unit} (more than {MAX_TEMPLATE_SIZE:,}: MAX_TEMPLATE_SIZE)"
    )


def weight(value: Any, limit: int = MAX_TEMPLATE_SIZE) -> int:
    """About the length of ``str(value)``, counted without building it, and without looking further once it
    passes ``limit`` (so weighing a huge structure is cheap): a list of a million references to one string of a
    million characters weighs a trillion, though it holds only a few megabytes."""
    if isinstance(value, _TEXT_TYPES):
        return len(value)
    if value is None or isinstance(value, (bool, float)):
        return 8
    if isinstance(value, int):
        return value.bit_length() // 3 + 1
    if isinstance(value, Namespace):
        value = dict(value._Namespace__attrs)
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple, set, frozenset)):
            if set(map(type, item)) <= {str}:  # the common case, a list of texts: counted in C
                total += sum(map(len, item)) + 4 * len(item) + 2
            else:
                total += 2
                stack.extend(item)
        elif isinstance(item, dict):
            total += 2
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, Namespace):
            stack.append(dict(item._Namespace__attrs))
        else:
            total += weight(item, limit) + 2 if isinstance(item, (str, bytes, int)) else 16
        if total > limit:
            break
    return total


def weigh(value: Any, what: str) -> Any:
    """``value``, after checking that its text would not pass ``MAX_TEMPLATE_SIZE``."""
    if isinstance(value, str):
        return value
    size = weight(value)
    if size > MAX_TEMPLATE_SIZE:
        raise too_large(what, size, "characters of text")
    return value


def charge(value: Any, budget: Budget | None, what: str, called: Any = None) -> Any:
    """``value``, the result of one step of ``budget`` (None outside a render), counted against the size of one
    value and the render's total (``MAX_TEMPLATE_BUILT``). ``what`` made it; when empty, a call of ``called``
    (named only if a check fails: naming every call would cost more than the checks)."""
    if budget is not None:
        budget.steps += 1
        if not budget.steps % CLOCK_EVERY:
            budget.tick()
    if type(value) is str or isinstance(value, _SIZED_TYPES):
        size = len(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        bits = value.bit_length()
        if bits > MAX_TEMPLATE_INT_BITS:
            raise TemplateLimitExceeded(
                f"{_named(what, called)} built an integer of {bits:,} bits (more than {MAX_TEMPLATE_INT_BITS:,}: "
                "MAX_TEMPLATE_INT_BITS)"
            )
        size = bits // 8
    else:
        return value
    if size > MAX_TEMPLATE_SIZE:
        raise too_large(_named(what, called), size)
    if budget is not None:
        budget.built += size
        if budget.built > MAX_TEMPLATE_BUILT:
            raise TemplateLimitExceeded(
                f"built more than {MAX_TEMPLATE_BUILT:,} characters or items in all (MAX_TEMPLATE_BUILT; at "
                f"{_named(what, called)})"
            )
    return value


def _named(what: str, called: Any) -> str:
    return what or f"{getattr(called, '__name__', 'a call')}()"


def _check(estimate: int, what: str) -> None:
    if estimate > MAX_TEMPLATE_SIZE:
        raise too_large(what, estimate)


def _check_int(value: Any, what: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_TEMPLATE_SIZE:
        raise too_large(what, abs(value))


def _widths(fmt: str) -> int:
    """The largest width or precision in a ``%`` or ``{}`` format string (``%10.3f``, ``{:>12}``), 0 if none."""
    numbers = [w for groups in _PERCENT.findall(fmt) for w in groups if w]
    numbers += _DIGITS.findall(" ".join(_BRACE_SPEC.findall(fmt)))
    if any(len(n) > 18 for n in numbers):
        return 10**18
    return max((int(n) for n in numbers), default=0)


def check_format_string(fmt: str, values: Iterable[Any], what: str) -> None:
    """Refuse ``fmt % values`` or ``fmt.format(*values)`` when widths or repeated fields would make it too long."""
    values = list(values)
    if "*" in fmt or _NESTED_SPEC.search(fmt):  # a width taken from the arguments
        for value in values:
            _check_int(value, what)
    fields = fmt.count("{") + fmt.count("%")
    if not fields:
        return
    biggest = max((weight(v) for v in values), default=0)
    _check(len(fmt) + fields * (_widths(fmt) + biggest), what)


def _join_estimate(sep: str, items: Iterable[Any], what: str) -> list[Any]:
    """``items`` as a list, after checking that joining them with ``sep`` stays within ``MAX_TEMPLATE_SIZE``."""
    listed = items if isinstance(items, list) else list(items)
    if set(map(type, listed)) <= {str}:
        total = sum(map(len, listed))
    else:
        total = 0
        for item in listed:
            total += weight(item)
            if total > MAX_TEMPLATE_SIZE:
                break
    _check(total + len(sep) * max(0, len(listed) - 1), what)
    return listed


def _replace_estimate(text: str, old: Any, new: Any, count: Any, what: str) -> None:
    if not isinstance(old, str) or not isinstance(new, str) or len(new) <= len(old):
        return
    found = len(text) + 1 if old == "" else text.count(old)
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    _check(len(text) + found * (len(new) - len(old)), what)


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


#: The methods of a text that can build a much longer text (checked by ``check_str_method`` before they run).
STR_CHECKS = frozenset(
    {"ljust", "rjust", "center", "zfill", "expandtabs", "join", "replace", "translate", "format", "format_map"}
)


def check_str_method(text: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Refuse a call of a text's method that would build a text over ``MAX_TEMPLATE_SIZE``; the arguments to use."""
    what = f"{name}()"
    if name in ("ljust", "rjust", "center", "zfill"):
        width = _arg(args, kwargs, 0, "width", 0)
        if isinstance(width, int):
            _check(width, what)
    elif name == "expandtabs":
        size = _arg(args, kwargs, 0, "tabsize", 8)
        if isinstance(size, int):
            _check(len(text) + text.count("\t") * size, what)
    elif name == "join" and args:
        return (_join_estimate(text, args[0], what), *args[1:])
    elif name == "replace":
        _replace_estimate(
            text, _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new"), _arg(args, kwargs, 2, "count"), what
        )
    elif name == "translate" and args and isinstance(args[0], dict):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        _check(len(text) * max(1, longest), what)
    elif name in ("format", "format_map"):
        values = [*args, *kwargs.values()]
        if name == "format_map" and args and isinstance(args[0], dict):
            values = list(args[0].values())
        check_format_string(text, values, what)
    return args


def _check_join(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> tuple[Any, ...] | None:
    value, sep = args[0], _arg(args, kwargs, 1, "d", "")
    if _arg(args, kwargs, 2, "attribute") is None and isinstance(sep, str) and not isinstance(value, (str, Undefined)):
        return (_join_estimate(sep, value, what), *args[1:])
    return None


def _check_center(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    width = _arg(args, kwargs, 1, "width", 80)
    if isinstance(width, int):
        _check(width, what)


def _check_indent(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    value, width = args[0], _arg(args, kwargs, 1, "width", 4)
    if isinstance(value, str):
        per_line = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        _check(len(value) + (value.count("\n") + 1) * per_line, what)


def _check_wordwrap(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    value, wrap = args[0], _arg(args, kwargs, 3, "wrapstring")
    if isinstance(value, str) and isinstance(wrap, str):
        _check(len(value) * (1 + len(wrap)), what)


def _check_replace(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    if isinstance(args[0], str):
        old, new, count = _arg(args, kwargs, 1, "old"), _arg(args, kwargs, 2, "new"), _arg(args, kwargs, 3, "count")
        _replace_estimate(args[0], old, new, count, what)


def _check_format(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    if isinstance(args[0], str):
        check_format_string(args[0], [*args[1:], *kwargs.values()], what)


def _check_batch(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    _check_int(_arg(args, kwargs, 1, "linecount", 0), what)


def _check_slice(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    _check_int(_arg(args, kwargs, 1, "slices", 0), what)


#: The filters that can build a value much larger than their inputs, and the check run before each. Their
#: ``args`` start at the filtered value (after any context, eval context or environment Jinja2 passes first);
#: a check returns new arguments where it had to read an iterator into a list, else None.
FILTER_CHECKS: dict[str, Callable[..., tuple[Any, ...] | None]] = {
    "join": _check_join,
    "center": _check_center,
    "indent": _check_indent,
    "wordwrap": _check_wordwrap,
    "replace": _check_replace,
    "format": _check_format,
    "batch": _check_batch,
    "slice": _check_slice,
}


def check_repeat(sequence: Any, times: Any, what: str) -> None:
    if not isinstance(sequence, _SEQUENCE_TYPES) or not isinstance(times, int) or isinstance(times, bool):
        return
    if times <= 1:
        return
    size = len(sequence) if isinstance(sequence, _TEXT_TYPES) else weight(sequence, MAX_TEMPLATE_SIZE // times + 1)
    _check(size * times, what)


def check_power(base: Any, exponent: Any) -> None:
    if not isinstance(base, int) or not isinstance(exponent, int) or exponent <= 1 or abs(base) <= 1:
        return
    bits = exponent * (abs(base).bit_length() - 1)
    if bits > MAX_TEMPLATE_INT_BITS:
        raise TemplateLimitExceeded(
            f"'**' would build an integer of about {bits:,} bits (more than {MAX_TEMPLATE_INT_BITS:,}: "
            "MAX_TEMPLATE_INT_BITS)"
        )


def limited_range(*args: int) -> range:
    """``range``, at most ``MAX_TEMPLATE_RANGE`` long."""
    numbers = range(*args)
    if len(numbers) > MAX_TEMPLATE_RANGE:
        raise TemplateLimitExceeded(
            f"range of {len(numbers):,} numbers (more than {MAX_TEMPLATE_RANGE:,}: MAX_TEMPLATE_RANGE)"
        )
    return numbers
