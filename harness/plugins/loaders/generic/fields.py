"""A task file's field mapping: each field is a column of the data, or a Jinja2 template over a row's columns.

Why a sandbox: a task file is data. Templates are rendered by ``jinja2.sandbox.ImmutableSandboxedEnvironment``,
so a template can read a row and call harmless methods (``passage.split(' ')``) but cannot reach Python internals
or mutate anything, and it runs under limits of time, size and depth (``limits``), so a hostile template stops
with one line instead of filling the memory or hanging. Undefined names are errors (``StrictUndefined``), so a
misspelt column is one line naming the field, the file and the row instead of an empty string in every prompt.

A value that contains ``{{`` or ``{%`` is a template; any other string names a column (text fields such as
``description`` or ``language`` take a plain string as the text itself). Fields that hold lists or numbers
(``options``, ``responses``, ``meta`` entries) are rendered to native Python values (``{{ a + [b] }}`` is a list).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, meta, nodes
from jinja2.sandbox import SecurityError

from harness.api import HarnessError, one_line, shorten_repr
from harness.plugins.loaders.generic.limits import TemplateLimitExceeded
from harness.plugins.loaders.generic.sandbox import LimitedSandbox, NativeLimitedSandbox

_TEXT = LimitedSandbox(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
_NATIVE = NativeLimitedSandbox(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
#: Rendered values that can be shared between rows (a list could be changed by whoever reads it).
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})
#: A column a row lacks, in a template's memo key (never equal to a value).
_MISSING = object()
#: A numbered column family: ``answer_*`` matches ``answer_1``, ``answer_2``, ... (the ``*`` stands for the number).
_FAMILY = re.compile(r"^([^*]*)\*([^*]*)$")


class RowError(HarnessError):
    """A problem with one row's value for one field; ``where`` says the file and row."""


class TemplateLimitError(HarnessError):
    """A template passed a limit of time, size or depth (``limits``) on one row: the message names the field, the
    file and the row. Not a ``RowError``: the load stops at once instead of trying (and timing out on) every other
    row, since a template that loops for a second on one row almost always does on all of them."""


def is_template(value: str) -> bool:
    return "{{" in value or "{%" in value


@dataclass(frozen=True)
class Field:
    """How one instance field is read from a row: a column, a template, or (text fields) a fixed text."""

    #: The data option that gave it (``context``, ``human.responses``): every message names it.
    name: str
    #: The column read, when the field names one.
    column: str | None = None
    #: The compiled template, when the field is one.
    template: Template | None = None
    #: A fixed value (text fields given plain text, or a YAML list or mapping).
    constant: Any = None
    #: What the task file wrote, for messages.
    given: str = ""
    #: The columns a template reads, when its value depends on nothing else (no ``row``, no ``random``): the
    #: last render is then reused for a row with the same values (``_last``).
    inputs: tuple[str, ...] | None = None
    #: ``[(the inputs' values, the text or number rendered from them)]`` once rendered: in long format every row of
    #: an instance has the same context and id, so most renders are this one look-up.
    _last: list[tuple[tuple[Any, ...], Any]] = field(default_factory=list, compare=False, repr=False)

    def value(self, row: Mapping[str, Any], where: str) -> Any:
        """The field's value for ``row``; a missing column or a failing template is a ``RowError``."""
        if self.column is not None:
            if self.column not in row:
                raise RowError(f"{where}: field '{self.name}': no column {self.column!r} (columns: {_columns(row)})")
            return row[self.column]
        if self.template is not None:
            key = None if self.inputs is None else tuple(row.get(name, _MISSING) for name in self.inputs)
            if key is not None and self._last and self._last[0][0] == key:
                return self._last[0][1]
            try:
                result = self.template.render(**row, row=row)
                if key is not None and type(result) in _IMMUTABLE:
                    self._last[:] = [(key, result)]
                return result
            except TemplateLimitExceeded as exc:
                raise TemplateLimitError(
                    f"{where}: field '{self.name}': template {shorten_repr(self.given, 60)} stopped: "
                    f"{one_line(str(exc), 200)}"
                ) from None
            except RecursionError:
                raise TemplateLimitError(
                    f"{where}: field '{self.name}': template {shorten_repr(self.given, 60)} stopped: it recursed "
                    "too deeply (a macro calling itself?)"
                ) from None
            except MemoryError:
                raise TemplateLimitError(
                    f"{where}: field '{self.name}': template {shorten_repr(self.given, 60)} stopped: out of memory"
                ) from None
            except SecurityError as exc:
                raise RowError(
                    f"{where}: field '{self.name}': template refused by the sandbox: {one_line(str(exc), 160)}"
                ) from None
            except (TemplateError, ArithmeticError, TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                raise RowError(
                    f"{where}: field '{self.name}': template {shorten_repr(self.given, 60)} failed: "
                    f"{type(exc).__name__}: {one_line(str(exc), 160)} (columns: {_columns(row)})"
                ) from None
        return self.constant


def _columns(row: Mapping[str, Any]) -> str:
    names = [str(k) for k in row if k != "row"]
    return ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")


def compile_template(source: str, name: str, *, native: bool) -> Template:
    """A sandboxed template; a syntax error is a ``ValueError`` naming the line (an option error upstream)."""
    try:
        return (_NATIVE if native else _TEXT).from_string(source)
    except RecursionError:
        raise ValueError("not a valid Jinja2 template: nested too deeply") from None
    except TemplateError as exc:
        line = getattr(exc, "lineno", None)
        at = f" (template line {line})" if line else ""
        raise ValueError(f"not a valid Jinja2 template{at}: {one_line(str(exc), 160)}") from None


def template_inputs(source: str, *, native: bool) -> tuple[str, ...] | None:
    """The names a (valid) template reads from the row, sorted; None when its value may depend on more than their
    values: it reads ``row`` (any column) or uses ``random``."""
    environment = _NATIVE if native else _TEXT
    tree = environment.parse(source)
    names = meta.find_undeclared_variables(tree)
    if "row" in names or any(node.name == "random" for node in tree.find_all(nodes.Filter)):
        return None
    return tuple(sorted(names))


def column_or_template(name: str, *, native: bool = False) -> Any:
    """Converter for a field that names a column or is a template (``harness.options`` style)."""

    def convert(value: Any) -> Field:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected a column name or a Jinja2 template, got {shorten_repr(value)}")
        if is_template(value):
            template = compile_template(value, name, native=native)
            return Field(name, template=template, given=value, inputs=template_inputs(value, native=native))
        return Field(name, column=value, given=value)

    convert.type_name = "column | template"  # type: ignore[attr-defined]
    return convert


def text_or_template(name: str) -> Any:
    """Converter for a text field (``description``, ``language``): plain text is the text; a template is rendered."""

    def convert(value: Any) -> Field:
        if not isinstance(value, str):
            raise ValueError(f"expected text or a Jinja2 template, got {shorten_repr(value)}")
        if is_template(value):
            template = compile_template(value, name, native=False)
            return Field(name, template=template, given=value, inputs=template_inputs(value, native=False))
        return Field(name, constant=value, given=value)

    convert.type_name = "text | template"  # type: ignore[attr-defined]
    return convert


def list_field(name: str) -> Any:
    """Converter for a list-valued field: a list column, a native template, or a fixed YAML list."""
    by_column = column_or_template(name, native=True)

    def convert(value: Any) -> Field:
        if isinstance(value, list):
            if not value or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"expected a non-empty list of texts, got {shorten_repr(value)}")
            return Field(name, constant=tuple(value), given=str(value))
        return by_column(value)

    convert.type_name = "column | template | list"  # type: ignore[attr-defined]
    return convert


def family(pattern: str) -> tuple[str, str] | None:
    """``('answer_', '')`` for ``answer_*``: the prefix and suffix around a numbered family's number, else None."""
    match = _FAMILY.match(pattern)
    return (match.group(1), match.group(2)) if match else None


def family_keys(pattern: str, columns: list[str]) -> dict[str, str]:
    """The columns of a numbered family by their number as written, in column order: ``Answer.q*`` over
    ``Answer.q01, Answer.q2`` is ``{'01': .., '2': ..}`` (the ``participants`` shape keeps an item's key as written)."""
    parts = family(pattern)
    if parts is None:
        return {}
    prefix, suffix = parts
    found: dict[str, str] = {}
    for column in columns:
        if column.startswith(prefix) and column.endswith(suffix):
            middle = column[len(prefix) : len(column) - len(suffix)]
            if middle.isdigit():
                found[middle] = column
    return found


def family_columns(pattern: str, columns: list[str]) -> dict[int, str]:
    """The columns of a numbered family, by number: ``answer_*`` over ``answer_2, answer_10`` is ``{2: .., 10: ..}``."""
    return dict(sorted({int(key): column for key, column in family_keys(pattern, columns).items()}.items()))
