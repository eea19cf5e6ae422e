"""A task file's field mapping: each field is a column of the data, or a Jinja2 template over a row's columns.

Why a sandbox: a task file is data. Templates are rendered by ``jinja2.sandbox.ImmutableSandboxedEnvironment``,
so a template can read a row and call harmless methods (``passage.split(' ')``) but cannot reach Python internals
or mutate anything. Undefined names are errors (``StrictUndefined``), so a misspelt column is one line naming the
field, the file and the row instead of an empty string in every prompt.

A value that contains ``{{`` or ``{%`` is a template; any other string names a column (text fields such as
``description`` or ``language`` take a plain string as the text itself). Fields that hold lists or numbers
(``options``, ``responses``, ``meta`` entries) are rendered to native Python values (``{{ a + [b] }}`` is a list).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError
from jinja2.nativetypes import NativeCodeGenerator, native_concat
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from harness.errors import HarnessError, one_line, shorten_repr


class _NativeSandbox(ImmutableSandboxedEnvironment):
    """The sandbox, rendering to Python values (``jinja2.nativetypes.NativeEnvironment``'s two settings)."""

    code_generator_class = NativeCodeGenerator
    concat = staticmethod(native_concat)  # type: ignore[assignment]


_TEXT = ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
_NATIVE = _NativeSandbox(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
#: A numbered column family: ``answer_*`` matches ``answer_1``, ``answer_2``, ... (the ``*`` stands for the number).
_FAMILY = re.compile(r"^([^*]*)\*([^*]*)$")


class RowError(HarnessError):
    """A problem with one row's value for one field; ``where`` says the file and row."""


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

    def value(self, row: Mapping[str, Any], where: str) -> Any:
        """The field's value for ``row``; a missing column or a failing template is a ``RowError``."""
        if self.column is not None:
            if self.column not in row:
                raise RowError(f"{where}: field '{self.name}': no column {self.column!r} (columns: {_columns(row)})")
            return row[self.column]
        if self.template is not None:
            try:
                return self.template.render(**row, row=row)
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
    except TemplateError as exc:
        line = getattr(exc, "lineno", None)
        at = f" (template line {line})" if line else ""
        raise ValueError(f"not a valid Jinja2 template{at}: {one_line(str(exc), 160)}") from None


def column_or_template(name: str, *, native: bool = False) -> Any:
    """Converter for a field that names a column or is a template (``harness.options`` style)."""

    def convert(value: Any) -> Field:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected a column name or a Jinja2 template, got {shorten_repr(value)}")
        if is_template(value):
            return Field(name, template=compile_template(value, name, native=native), given=value)
        return Field(name, column=value, given=value)

    convert.type_name = "column | template"  # type: ignore[attr-defined]
    return convert


def text_or_template(name: str) -> Any:
    """Converter for a text field (``description``, ``language``): plain text is the text; a template is rendered."""

    def convert(value: Any) -> Field:
        if not isinstance(value, str):
            raise ValueError(f"expected text or a Jinja2 template, got {shorten_repr(value)}")
        if is_template(value):
            return Field(name, template=compile_template(value, name, native=False), given=value)
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


def family_columns(pattern: str, columns: list[str]) -> dict[int, str]:
    """The columns of a numbered family, by number: ``answer_*`` over ``answer_2, answer_10`` is ``{2: .., 10: ..}``."""
    parts = family(pattern)
    if parts is None:
        return {}
    prefix, suffix = parts
    found: dict[int, str] = {}
    for column in columns:
        if column.startswith(prefix) and column.endswith(suffix):
            middle = column[len(prefix) : len(column) - len(suffix)]
            if middle.isdigit():
                found[int(middle)] = column
    return dict(sorted(found.items()))
