"""The task YAML schema: parsing, validation and ``--task-args`` overrides.

Task files are data. They are read with ``yaml.safe_load`` (no tags, no code) and validated in full before any
data or model is loaded; every error names the file, the field and what was expected.

A task file::

    task: provo                 # name used with --tasks
    version: 1                  # bump when results stop being comparable
    description: ...
    loader: provo               # a registered data loader
    data: {path: provo}         # options for the loader
    request: sample_words       # the kind of request sent to the model
    params: {n_samples: 1000}   # request parameters (overridable: --task-args n_samples=40)
    scorers:                    # registered scorers, optionally with args (--task-args ece.n_bins=15)
      - tvd
      - {name: ece, args: {n_bins: 10}}
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import TaskConfigError
from harness.options import OptionError, Options

TASK_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
TOP_LEVEL_FIELDS = ("task", "version", "description", "loader", "data", "request", "params", "scorers", "tags")
REQUIRED_FIELDS = ("task", "version", "loader", "request", "scorers")


@dataclass(frozen=True)
class ScorerSpec:
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskConfig:
    """A validated task definition (after ``--task-args`` overrides)."""

    task: str
    version: int
    loader: str
    request: str
    scorers: tuple[ScorerSpec, ...]
    description: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    source_file: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The configuration as recorded in ``results.json`` (``configs``), defaults filled in."""
        return {
            "task": self.task,
            "version": self.version,
            "description": self.description,
            "loader": self.loader,
            "data": self.data,
            "request": self.request,
            "params": self.params,
            "scorers": [{"name": s.name, "args": s.args} for s in self.scorers],
            "tags": list(self.tags),
        }


def _type_name(value: Any) -> str:
    return type(value).__name__


def _got(value: Any) -> str:
    return f"got {value!r} ({_type_name(value)})"


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskConfigError(str(path), "<file>", f"a readable task file ({exc.strerror})") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TaskConfigError(str(path), "<document>", f"valid YAML (safe subset){where}: {problem}") from exc


def read_task_name(path: Path) -> str:
    raw = read_yaml(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("task"), str):
        raise TaskConfigError(str(path), "task", "a task name (string)")
    return str(raw["task"])


def parse_task_args(text: str | None) -> dict[str, Any]:
    """Parse ``k=v,k2=v2``; values are YAML scalars (``40`` is an int, ``0.5`` a float, ``paper`` a string)."""
    overrides: dict[str, Any] = {}
    if not text:
        return overrides
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TaskConfigError("--task-args", item, "key=value")
        try:
            overrides[key.strip()] = yaml.safe_load(value.strip()) if value.strip() else ""
        except yaml.YAMLError:
            overrides[key.strip()] = value.strip()
    return overrides


def apply_overrides(raw: dict[str, Any], overrides: Mapping[str, Any], file: str) -> dict[str, Any]:
    """Apply ``--task-args``: ``key`` sets ``params.key``; ``scorer.key`` sets that scorer's ``args.key``."""
    raw = copy.deepcopy(raw)
    for key, value in overrides.items():
        if "." in key:
            scorer_name, _, arg = key.partition(".")
            entries = raw.get("scorers") or []
            for i, entry in enumerate(entries):
                name = entry if isinstance(entry, str) else entry.get("name") if isinstance(entry, dict) else None
                if name == scorer_name:
                    if isinstance(entry, str):
                        entry = entries[i] = {"name": entry, "args": {}}
                    entry.setdefault("args", {})[arg] = value
                    break
            else:
                raise TaskConfigError("--task-args", key, f"a scorer listed in {file} (scorers: {entries})")
        else:
            params = raw.get("params")
            if params is None:
                params = raw["params"] = {}
            if not isinstance(params, dict):
                raise TaskConfigError(file, "params", "a mapping")
            params[key] = value
    return raw


def validate(raw: Any, file: str) -> TaskConfig:
    """Check a parsed task file against the schema and fill in parameter defaults."""
    if not isinstance(raw, dict):
        raise TaskConfigError(file, "<document>", f"a mapping of task fields, {_got(raw)}")
    for key in raw:
        if key not in TOP_LEVEL_FIELDS:
            raise TaskConfigError(file, str(key), f"no such field; allowed fields are {', '.join(TOP_LEVEL_FIELDS)}")
    for key in REQUIRED_FIELDS:
        if key not in raw:
            raise TaskConfigError(file, key, "a value (this field is required)")

    task = raw["task"]
    if not isinstance(task, str) or not TASK_NAME_RE.match(task):
        raise TaskConfigError(file, "task", f"a lower-case name matching {TASK_NAME_RE.pattern}, {_got(task)}")
    version = raw["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise TaskConfigError(file, "version", f"a non-negative integer, {_got(version)}")
    for key in ("loader", "description"):
        if key in raw and not isinstance(raw[key], str):
            raise TaskConfigError(file, key, f"a string, {_got(raw[key])}")
    data = raw.get("data") or {}
    if not isinstance(data, dict):
        raise TaskConfigError(file, "data", f"a mapping of loader options, {_got(data)}")
    tags = raw.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise TaskConfigError(file, "tags", f"a list of strings, {_got(tags)}")

    from harness.plugins import get_registry

    registry = get_registry()
    request = raw["request"]
    task_kinds = registry.task_kinds()
    if request not in task_kinds:
        raise TaskConfigError(file, "request", f"one of {', '.join(task_kinds)}, {_got(request)}")
    params = _validate_params(raw.get("params") or {}, registry.kind(request).params, file)
    scorers = _validate_scorers(raw["scorers"], file)
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


def _validate_params(params: Any, options: Options, file: str) -> dict[str, Any]:
    """The request parameters, checked by the request kind's options, defaults filled in, sorted by name."""
    if not isinstance(params, dict):
        raise TaskConfigError(file, "params", f"a mapping of request parameters, {_got(params)}")
    for key in params:
        if key not in options:
            raise TaskConfigError(file, f"params.{key}", f"no such parameter; known: {', '.join(options.names())}")
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
            if detail.endswith(f"got {value!r}"):
                detail += f" ({type(value).__name__})"
            raise TaskConfigError(file, f"params.{option.name}", detail) from None
    return dict(sorted(out.items()))


def _validate_scorers(entries: Any, file: str) -> tuple[ScorerSpec, ...]:
    if not isinstance(entries, list) or not entries:
        raise TaskConfigError(file, "scorers", f"a non-empty list of scorer names or {{name, args}}, {_got(entries)}")
    specs: list[ScorerSpec] = []
    for i, entry in enumerate(entries):
        where = f"scorers[{i}]"
        if isinstance(entry, str):
            specs.append(ScorerSpec(entry))
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise TaskConfigError(file, where, f"a scorer name or a mapping with 'name', {_got(entry)}")
        extra = set(entry) - {"name", "args"}
        if extra:
            raise TaskConfigError(file, f"{where}.{sorted(extra)[0]}", "no such field; a scorer takes name and args")
        args = entry.get("args") or {}
        if not isinstance(args, dict):
            raise TaskConfigError(file, f"{where}.args", f"a mapping, {_got(args)}")
        specs.append(ScorerSpec(entry["name"], dict(args)))
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TaskConfigError(file, "scorers", f"each scorer at most once, '{dupes[0]}' is listed twice")
    return tuple(specs)


def load_task_file(path: Path, overrides: Mapping[str, Any] | None = None) -> TaskConfig:
    raw = read_yaml(path)
    if overrides:
        if not isinstance(raw, dict):
            raise TaskConfigError(str(path), "<document>", f"a mapping of task fields, {_got(raw)}")
        raw = apply_overrides(raw, overrides, str(path))
    return validate(raw, str(path))
