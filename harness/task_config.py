"""The task YAML schema: parsing, validation and ``--task-args`` overrides.

Task files are data. They are read with a bounded ``yaml.SafeLoader`` (no tags, no code; no aliases, no duplicate
keys, at most ``MAX_YAML_DEPTH`` levels of nesting, at most ``MAX_TASK_FILE_BYTES`` bytes of UTF-8) and validated in
full before any data or model is loaded; every error names the file, the field and what was expected, and echoes a
value in at most about 80 characters.

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
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

from harness.errors import HarnessError, TaskConfigError, one_line, shorten, shorten_repr
from harness.files import decode_utf8, read_bytes

TASK_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
TOP_LEVEL_FIELDS = ("task", "version", "description", "loader", "data", "request", "params", "scorers", "tags")
REQUIRED_FIELDS = ("task", "version", "loader", "request", "scorers")
#: A task file is a few kilobytes; anything near this is the wrong file.
MAX_TASK_FILE_BYTES = 1 << 20
#: Levels of nesting a YAML document may have (task files use three or four).
MAX_YAML_DEPTH = 64
#: The largest ``version`` a task file may declare.
MAX_VERSION = 1_000_000
#: The longest loader or scorer name (registered names are short words; a longer one is a pasted mistake).
MAX_NAME = 100


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
    return f"got {shorten_repr(value)} ({_type_name(value)})"


def _field(key: object) -> str:
    """A key of the user's as a field name in a message (a key can be anything YAML allows, of any length)."""
    return shorten(key if isinstance(key, str) else shorten_repr(key), 60)


class BoundedYamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` for files people write by hand, bounded so that a small file stays small.

    Refused, each as a ``yaml.YAMLError`` with the line and column: aliases (``*name``; an alias bomb turns 500 bytes
    into gigabytes, and a task file never needs one), nesting deeper than ``MAX_YAML_DEPTH`` (which would otherwise
    end in a RecursionError), and a key given twice in one mapping (which YAML would let the second silently win).
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise ComposerError(
                None,
                None,
                f"alias *{shorten(event.anchor, 40)} is not allowed here (write the value out instead)",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise ComposerError(
                    None, None, f"nested more than {MAX_YAML_DEPTH} levels deep", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                try:
                    seen = first_line.get(key)
                except TypeError:  # unhashable: the base class reports it
                    continue
                if seen is not None:
                    raise ConstructorError(
                        None,
                        None,
                        f"duplicate key {shorten_repr(key, 60)} (lines {seen} and {line}; give each key once)",
                        key_node.start_mark,
                    )
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> Any:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # Python refuses to read integers of more than 4,300 digits
            raise ConstructorError(
                None, None, f"an integer of {len(node.value)} characters is too long", node.start_mark
            ) from None


BoundedYamlLoader.add_constructor("tag:yaml.org,2002:int", BoundedYamlLoader.construct_yaml_int)


def load_yaml(text: str) -> Any:
    """One YAML document read with ``BoundedYamlLoader``; raises ``yaml.YAMLError``."""
    try:
        return yaml.load(text, Loader=BoundedYamlLoader)
    except RecursionError:
        raise yaml.YAMLError(f"nested more than {MAX_YAML_DEPTH} levels deep") from None
    except (ValueError, OverflowError) as exc:  # a constructor's own error, without a line: still one line
        raise yaml.YAMLError(one_line(str(exc), 200)) from None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """Where and what a YAML error is, in one line: ``at line 3, column 5: found duplicate key ...``."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["not valid YAML"])[0]
    context = getattr(exc, "context", None)
    if context and getattr(exc, "problem", None):
        problem = f"{context}, {problem}"
    return f"{where}: {one_line(problem, 200)}"


def read_yaml(path: Path) -> Any:
    """The parsed task file; every failure is a ``TaskConfigError`` naming the file (and line, or byte offset)."""
    file = str(path)
    try:
        text = decode_utf8(read_bytes(path, "task file", MAX_TASK_FILE_BYTES), path)
    except HarnessError as exc:
        raise TaskConfigError(file, "<file>", str(exc).removeprefix(f"{file}: ")) from None
    if not text.strip():
        raise TaskConfigError(file, "<document>", "a mapping of task fields, got an empty file")
    try:
        parsed = load_yaml(text)
    except yaml.YAMLError as exc:
        raise TaskConfigError(file, "<document>", f"valid YAML (safe subset){yaml_problem(exc)}") from None
    if parsed is None:
        raise TaskConfigError(file, "<document>", "a mapping of task fields, got an empty document")
    return parsed


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
        key = key.strip()
        if not sep or not key:
            raise TaskConfigError("--task-args", _field(item.strip()), "key=value")
        if key in overrides:
            raise TaskConfigError("--task-args", _field(key), "each key once (it is given twice)")
        try:
            overrides[key] = load_yaml(value.strip()) if value.strip() else ""
        except yaml.YAMLError:
            overrides[key] = value.strip()
    return overrides


def apply_overrides(raw: dict[str, Any], overrides: Mapping[str, Any], file: str) -> dict[str, Any]:
    """Apply ``--task-args``: ``key`` sets ``params.key``; ``scorer.key`` sets that scorer's ``args.key``."""
    raw = copy.deepcopy(raw)
    for key, value in overrides.items():
        if "." in key:
            scorer_name, _, arg = key.partition(".")
            entries = raw.get("scorers") or []
            if not isinstance(entries, list):
                raise TaskConfigError(
                    file, "scorers", f"a non-empty list of scorer names or {{name, args}}, {_got(entries)}"
                )
            for i, entry in enumerate(entries):
                name = entry if isinstance(entry, str) else entry.get("name") if isinstance(entry, dict) else None
                if name == scorer_name:
                    if isinstance(entry, str):
                        entry = entries[i] = {"name": entry, "args": {}}
                    if entry.get("args") is None:
                        entry["args"] = {}
                    if not isinstance(entry["args"], dict):
                        raise TaskConfigError(file, f"scorers[{i}].args", f"a mapping, {_got(entry['args'])}")
                    entry["args"][arg] = value
                    break
            else:
                names = [e if isinstance(e, str) else e.get("name") if isinstance(e, dict) else e for e in entries]
                raise TaskConfigError(
                    "--task-args", _field(key), f"a scorer listed in {file} (scorers: {shorten_repr(names, 200)})"
                )
        else:
            params = raw.get("params")
            if params is None:
                params = raw["params"] = {}
            if not isinstance(params, dict):
                raise TaskConfigError(file, "params", "a mapping")
            params[key] = value
    return raw
