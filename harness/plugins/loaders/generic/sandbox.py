"""The Jinja2 sandbox the generic loaders render a task file's templates in, under the limits of ``limits``.

``LimitedSandbox`` is ``jinja2.sandbox.ImmutableSandboxedEnvironment`` with every call, filter, test, ``*``,
``**``, ``+`` and ``%`` checked and counted, every ``{% for %}`` iterating through ``guard_iter``, every output and
``~`` weighed before it becomes text, and the output pieces counted before they are joined (``limits`` says why
and how much). ``NativeLimitedSandbox`` renders to Python values. The checks add a few microseconds to a render of
ten to twenty, and ``fields.Field`` reuses a render for consecutive rows with the same inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.environment import Template
from jinja2.nativetypes import NativeCodeGenerator, native_concat
from jinja2.runtime import markup_join, str_join
from jinja2.sandbox import ImmutableSandboxedEnvironment

from harness.plugins.loaders.generic.limits import (
    FILTER_CHECKS,
    LIST_FILTERS,
    MAX_TEMPLATE_DEPTH,
    MAX_TEMPLATE_SIZE,
    STR_CHECKS,
    Budget,
    TemplateLimitExceeded,
    charge,
    check_format_string,
    check_power,
    check_repeat,
    check_str_method,
    current_budget,
    limited_range,
    state,
    too_large,
    weigh,
    weight,
)


class _LimitedCodeGenerator(CodeGenerator):
    """Jinja2's code generator, with every output and ``~`` weighed before it becomes text."""

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        super()._output_child_pre(node, frame, finalize)
        self.write("environment.weigh_output(")

    def _output_child_post(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        self.write(")")
        super()._output_child_post(node, frame, finalize)

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        volatile = frame.eval_ctx.volatile
        markup = "context.eval_ctx.autoescape" if volatile else repr(bool(frame.eval_ctx.autoescape))
        self.write("environment.guarded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write(f"), {markup})")


class _NativeLimitedCodeGenerator(_LimitedCodeGenerator, NativeCodeGenerator):
    """The same, for templates rendered to Python values."""


class LimitedTemplate(Template):
    """A template whose every render has its own ``Budget`` and whose result is within ``MAX_TEMPLATE_SIZE``."""

    def render(self, *args: Any, **kwargs: Any) -> Any:
        outer = current_budget()
        state.budget = Budget()
        try:
            return super().render(*args, **kwargs)
        finally:
            state.budget = outer


class LimitedSandbox(ImmutableSandboxedEnvironment):
    """``ImmutableSandboxedEnvironment`` under the module's limits (module docstring)."""

    code_generator_class = _LimitedCodeGenerator
    template_class = LimitedTemplate
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.globals["range"] = limited_range
        # lipsum(n) writes n paragraphs: a text generator a data mapping has no use for.
        self.globals.pop("lipsum", None)
        self.filters = {name: _guard_filter(name, f) for name, f in self.filters.items()}
        tests: dict[str, Any] = self.tests
        self.tests = {name: _guard_test(f) for name, f in tests.items()}

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        """The parsed template, each ``{% for %}`` iterating through ``guard_iter`` (a step per iteration)."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Call(
                nodes.EnvironmentAttribute("guard_iter"), [loop.iter], [], None, None, lineno=loop.lineno
            )
        return tree

    def guard_iter(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """``iterable``, one step of the render's budget per item."""
        budget = current_budget()
        if budget is None:
            yield from iterable
            return
        for item in iterable:
            budget.step()
            yield item

    def weigh_output(self, value: Any) -> Any:
        return weigh(value, "the output")

    def guarded_concat(self, parts: tuple[Any, ...], markup: bool) -> Any:
        """``a ~ b ~ ...``: each part weighed before it becomes text, and the result charged."""
        total = 0
        for part in parts:
            total += len(part) if isinstance(part, str) else weight(part)
        if total > MAX_TEMPLATE_SIZE:
            raise too_large("'~'", total, "characters of text")
        return charge(markup_join(parts) if markup else str_join(parts), current_budget(), "'~'")

    def concat(self, values: Iterable[str]) -> str:
        """The output pieces (texts) joined, refused before joining if together they pass ``MAX_TEMPLATE_SIZE``."""
        pieces = list(values)
        total = sum(map(len, pieces))
        if total > MAX_TEMPLATE_SIZE:
            raise too_large("the output", total, "characters of text")
        return "".join(pieces)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        what = f"'{operator}'"
        if operator == "*":
            check_repeat(left, right, what)
            check_repeat(right, left, what)
        elif operator == "**":
            check_power(left, right)
        elif operator == "%" and isinstance(left, str):
            check_format_string(left, right if isinstance(right, tuple) else [right], what)
        return charge(self.binop_table[operator](left, right), current_budget(), what)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        owner = getattr(__obj, "__self__", None)
        if owner is None:
            owner = getattr(getattr(__obj, "__wrapped__", None), "__self__", None)  # the sandbox's str.format
        if isinstance(owner, str):
            name = getattr(__obj, "__name__", "")
            if name in STR_CHECKS:
                args = check_str_method(owner, name, args, kwargs)
        budget: Budget | None = getattr(state, "budget", None)
        if budget is None:
            return charge(super().call(__context, __obj, *args, **kwargs), None, "", __obj)
        budget.depth += 1
        try:
            if budget.depth > MAX_TEMPLATE_DEPTH:
                raise TemplateLimitExceeded(
                    f"calls nested more than {MAX_TEMPLATE_DEPTH} deep (MAX_TEMPLATE_DEPTH): a macro calling itself?"
                )
            result = super().call(__context, __obj, *args, **kwargs)
        finally:
            budget.depth -= 1
        return charge(result, budget, "", __obj)


class NativeLimitedSandbox(LimitedSandbox):
    """The limited sandbox rendering to Python values (``jinja2.nativetypes.NativeEnvironment``'s two settings)."""

    code_generator_class = _NativeLimitedCodeGenerator

    def concat(self, values: Iterable[Any]) -> Any:
        """``native_concat`` of the output pieces, refused before joining if their text would pass the limit."""
        pieces = list(values)
        if len(pieces) == 1:
            # One value (``{{ t }}``): kept as it is, text included. ``native_concat`` would read a text that looks
            # like a Python literal as that literal (a cell ``3.50`` as 3.5, ``[1]`` as a list): cells are read as
            # written, and only text built from several pieces is read as a literal.
            return pieces[0]
        total = 0
        for piece in pieces:
            total += len(piece) if isinstance(piece, str) else weight(piece)
        if total > MAX_TEMPLATE_SIZE:
            raise too_large("the output", total, "characters of text")
        return native_concat(pieces)


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (the filter ``name``) taking a step, checked before (``FILTER_CHECKS``; a filter that turns its
    value into text weighs it first) and charged after."""
    skip = 1 if hasattr(func, "jinja_pass_arg") else 0
    check = FILTER_CHECKS.get(name)
    stringifies = name not in LIST_FILTERS
    what = f"filter '{name}'"

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if stringifies and len(args) > skip and not isinstance(args[skip], str):
            weigh(args[skip], what)
        if check is not None and len(args) > skip:
            checked = check(args[skip:], kwargs, what)
            if checked is not None:
                args = (*args[:skip], *checked)
        return charge(func(*args, **kwargs), getattr(state, "budget", None), what)

    return guarded


def _guard_test(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = current_budget()
        if budget is not None:
            budget.step()
        return func(*args, **kwargs)

    return guarded
