"""Checking a parsed task file against the schema and the installed plugins, every problem at once.

Why every problem: a task file written by hand usually has more than one mistake, and a check that stops at the
first makes the user run it once per mistake. Checks that do not depend on each other each report their own
problem; a check that needs an earlier field (the parameters need a valid ``request``) is skipped when that field
is wrong. One problem is a ``TaskConfigError``, several a ``TaskConfigErrors`` listing them all.

The installed plugins come in as a ``TaskSchema`` (the registry is one; ``load_task_file`` takes the installed
plugins' unless told otherwise). This module sits above the registry; ``harness.task_config`` (the schema's
fields and YAML reading), which the registry needs to read a task's name, sits below it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from harness.errors import TaskConfigError, TaskConfigErrors, shorten_repr
from harness.options import OptionError, Options
from harness.registry.manager import get_registry
from harness.task_config import (
    MAX_NAME,
    MAX_VERSION,
    REQUIRED_FIELDS,
    TASK_NAME_RE,
    TOP_LEVEL_FIELDS,
    ScorerSpec,
    TaskConfig,
    _field,
    _got,
    apply_overrides,
    read_yaml,
)


class TaskSchema(Protocol):
    """What checking a task file needs to know of the installed plugins (``harness.registry.manager.Registry``)."""

    @property
    def loaders(self) -> Mapping[str, Any]: ...

    def task_kinds(self) -> list[str]: ...

    def kind(self, name: str) -> Any: ...


class _Problems:
    """The problems found in one file: ``add`` records one, and a ``check()`` block records what the code inside
    it raises and goes on."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[TaskConfigError] = []

    def add(self, field: str, expected: str) -> None:
        self.errors.append(TaskConfigError(self.file, field, expected))

    @contextmanager
    def check(self) -> Iterator[None]:
        try:
            yield
        except TaskConfigErrors as exc:
            self.errors.extend(exc.errors)
        except TaskConfigError as exc:
            self.errors.append(exc)

    def raise_any(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise TaskConfigErrors(self.errors)


def validate(raw: Any, file: str, schema: TaskSchema | None = None) -> TaskConfig:
    """Check a parsed task file against the schema and ``schema``'s plugins (the installed ones unless given), and
    fill in parameter defaults."""
    schema = get_registry() if schema is None else schema
    if not isinstance(raw, dict):
        raise TaskConfigError(file, "<document>", f"a mapping of task fields, {_got(raw)}")
    problems = _Problems(file)
    for key in raw:
        if key not in TOP_LEVEL_FIELDS:
            problems.add(_field(key), f"no such field; allowed fields are {', '.join(TOP_LEVEL_FIELDS)}")
    for key in REQUIRED_FIELDS:
        if key not in raw:
            problems.add(key, "a value (this field is required)")

    task: Any = raw.get("task")
    version: Any = raw.get("version")
    if "task" in raw and not (isinstance(task, str) and TASK_NAME_RE.match(task)):
        problems.add("task", f"a lower-case name matching {TASK_NAME_RE.pattern}, {_got(task)}")
    if "version" in raw and (
        not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= MAX_VERSION
    ):
        problems.add("version", f"a non-negative integer (at most {MAX_VERSION}), {_got(version)}")
    loader_ok = "loader" in raw
    for key in ("loader", "description"):
        if key in raw and not isinstance(raw[key], str):
            loader_ok = loader_ok and key != "loader"
            problems.add(key, f"a string, {_got(raw[key])}")
    if loader_ok and len(raw["loader"]) > MAX_NAME:
        loader_ok = False
        problems.add("loader", f"a loader name (at most {MAX_NAME} characters), {_got(raw['loader'])}")
    data = {} if raw.get("data") is None else raw["data"]
    data_ok = isinstance(data, dict)
    if not isinstance(data, dict):
        problems.add("data", f"a mapping of loader options, {_got(data)}")
    else:
        for key in data:
            if not isinstance(key, str):
                data_ok = False
                problems.add(f"data.{_field(key)}", "an option name (a string)")
                break
    tags = [] if raw.get("tags") is None else raw["tags"]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.add("tags", f"a list of strings, {_got(tags)}")

    request: Any = raw.get("request")
    task_kinds = schema.task_kinds()
    request_ok = isinstance(request, str) and request in task_kinds
    if "request" in raw and not request_ok:
        problems.add("request", f"one of {', '.join(task_kinds)}, {_got(request)}")
    if loader_ok and data_ok:
        with problems.check():
            _check_loader_options(schema, raw["loader"], data, file)
    params: dict[str, Any] = {}
    if request_ok:
        with problems.check():
            raw_params = {} if raw.get("params") is None else raw["params"]
            params = _validate_params(raw_params, schema.kind(request).params, file)
    scorers: tuple[ScorerSpec, ...] = ()
    if "scorers" in raw:
        with problems.check():
            scorers = _validate_scorers(raw["scorers"], file)
    problems.raise_any()
    return TaskConfig(
        task=task,
        version=version,
        loader=raw["loader"],
        request=request,
        scorers=scorers,
        description=raw.get("description", "").strip(),
        data=data,
        params=params,
        tags=tuple(tags),
        source_file=file,
    )


def _check_loader_options(schema: TaskSchema, loader_name: str, data: dict[str, Any], file: str) -> None:
    """The loader checks its options again when it runs; checking them here lets ``harness validate`` and a run
    report a misspelt data option before anything is loaded."""
    loader = schema.loaders.get(loader_name)
    declared = getattr(loader.obj, "options", None) if loader is not None else None
    if isinstance(declared, Options):
        try:
            declared.parse(data, f"loader '{loader_name}'")
        except OptionError as exc:
            raise TaskConfigError(file, "data", str(exc)) from None


def _validate_params(params: Any, options: Options, file: str) -> dict[str, Any]:
    """The request parameters, checked by the request kind's options, defaults filled in, sorted by name."""
    if not isinstance(params, dict):
        raise TaskConfigError(file, "params", f"a mapping of request parameters, {_got(params)}")
    problems = _Problems(file)
    for key in params:
        if key not in options:
            problems.add(f"params.{_field(key)}", f"no such parameter; known: {', '.join(options.names())}")
    out: dict[str, Any] = {}
    for option in options:
        if option.name not in params:
            out[option.name] = option.default
            continue
        try:
            out[option.name] = option.check(params[option.name], file)
        except OptionError as exc:
            detail = str(exc).split(f"option '{option.name}': ", 1)[-1].removeprefix("expected ")
            value = params[option.name]
            if detail.endswith(f"got {shorten_repr(value)}"):
                detail += f" ({type(value).__name__})"
            problems.add(f"params.{option.name}", detail)
    problems.raise_any()
    return dict(sorted(out.items()))


def _validate_scorers(entries: Any, file: str) -> tuple[ScorerSpec, ...]:
    if not isinstance(entries, list) or not entries:
        raise TaskConfigError(file, "scorers", f"a non-empty list of scorer names or {{name, args}}, {_got(entries)}")
    problems = _Problems(file)
    specs: list[ScorerSpec] = []
    for i, entry in enumerate(entries):
        with problems.check():
            specs.append(_scorer_spec(entry, f"scorers[{i}]", file))
    for i, spec in enumerate(specs):
        if len(spec.name) > MAX_NAME:
            problems.add(f"scorers[{i}]", f"a scorer name (at most {MAX_NAME} characters), {_got(spec.name)}")
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.add("scorers", f"each scorer at most once, '{_field(dupes[0])}' is listed twice")
    problems.raise_any()
    return tuple(specs)


def _scorer_spec(entry: Any, where: str, file: str) -> ScorerSpec:
    if isinstance(entry, str):
        return ScorerSpec(entry)
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise TaskConfigError(file, where, f"a scorer name or a mapping with 'name', {_got(entry)}")
    extra = sorted(_field(key) for key in set(entry) - {"name", "args"})
    if extra:
        raise TaskConfigError(file, f"{where}.{extra[0]}", "no such field; a scorer takes name and args")
    args = {} if entry.get("args") is None else entry["args"]
    if not isinstance(args, dict):
        raise TaskConfigError(file, f"{where}.args", f"a mapping, {_got(args)}")
    for key in args:
        if not isinstance(key, str):
            raise TaskConfigError(file, f"{where}.args.{_field(key)}", "an argument name (a string)")
    return ScorerSpec(entry["name"], dict(args))


def load_task_file(
    path: Path, overrides: Mapping[str, Any] | None = None, *, schema: TaskSchema | None = None
) -> TaskConfig:
    """Read, override (``--task-args``) and check a task file; ``schema`` defaults to the installed plugins."""
    raw = read_yaml(path)
    if overrides:
        if not isinstance(raw, dict):
            raise TaskConfigError(str(path), "<document>", f"a mapping of task fields, {_got(raw)}")
        raw = apply_overrides(raw, overrides, str(path))
    return validate(raw, str(path), schema)
