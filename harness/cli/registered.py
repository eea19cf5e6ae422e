"""``harness ls``, ``harness validate`` and ``harness plugins``: what the installed plugins register, and whether
a task file fits it. These are the commands a plugin author checks their work with, so each says where a thing
comes from: the plugin that registered it and, for a task, its YAML file."""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.cli.parsing import add_command
from harness.data.loaders import resolve_data_dir
from harness.errors import HarnessError
from harness.extras import MissingExtraError
from harness.options import Options
from harness.registry.manager import Registry, get_registry
from harness.registry.task_loading import (
    check_against_registry,
    check_registered_name,
    naming_task_file,
    registered_or_path,
)
from harness.registry.task_validation import load_task_file
from harness.task_config import TaskConfig

LISTABLE = ("tasks", "scorers", "models", "loaders", "classifiers", "kinds")


def add_ls(sub: Any) -> None:
    p = add_command(
        sub,
        "ls",
        "list registered tasks, scorers, model kinds, loaders, classifiers or request kinds",
        ("harness ls tasks", "harness ls scorers --options", "harness ls models --options"),
        description="list registered tasks (with their YAML files), scorers, model kinds, loaders, classifiers or "
        "request kinds, each with the plugin that registered it",
    )
    p.add_argument("what", choices=LISTABLE)
    p.add_argument("--options", action="store_true", help="also print each one's options: name, type, default and help")
    p.set_defaults(handler=cmd_ls)


def add_validate(sub: Any) -> None:
    p = add_command(
        sub,
        "validate",
        "check task YAML files, or registered tasks, against the schema and the installed plugins",
        (
            "harness validate provo",
            "harness validate tasks/provo-paper.yaml provo-exact",
            "harness validate examples/your-data/provo-long.yaml --data-dir ../shared/data",
        ),
        description="check task YAML files, or registered tasks, against the schema and the installed plugins; a "
        "task over the generic loaders (your own data) also has its field mapping checked on its data's first rows",
    )
    p.add_argument("files", nargs="+", help="a registered task name (harness ls tasks) or a YAML file")
    p.add_argument(
        "--data-dir", default=None, help="data root for the data checks (default: $HARNESS_DATA_DIR, else the cache)"
    )
    p.set_defaults(handler=cmd_validate)


def add_plugins(sub: Any) -> None:
    p = add_command(sub, "plugins", "list loaded plugins and what they register", ("harness plugins",))
    p.set_defaults(handler=cmd_plugins)


def _options_of(registry: Registry, what: str, name: str) -> Options:
    """The options a registered object takes: a task's request parameters (with the task file's values as
    defaults), a scorer's or classifier's arguments, a model's ``--model-args``, a loader's data options."""
    if what == "tasks":
        config = load_task_file(Path(str(registry.tasks[name].obj)))
        params = registry.kind(config.request).params
        return Options(*(replace(o, default=config.params.get(o.name, o.default)) for o in params))
    if what == "kinds":
        return registry.kind(name).params
    if what == "models":
        return registry.model(name).options
    obj = {"scorers": registry.scorers, "loaders": registry.loaders, "classifiers": registry.classifiers}[what][name]
    return getattr(obj.obj, "options", None) or Options()


def cmd_ls(args: argparse.Namespace) -> int:
    """One line per name: ``NAME<tab>PLUGIN``, and for a task ``<tab>YAML FILE`` (where to read or copy it)."""
    registry = get_registry()
    table = {
        "tasks": registry.tasks,
        "scorers": registry.scorers,
        "models": registry.models,
        "loaders": registry.loaders,
        "classifiers": registry.classifiers,
        "kinds": registry.kinds,
    }
    for name, reg in sorted(table[args.what].items()):
        where = f"\t{reg.obj}" if args.what == "tasks" else ""
        print(f"{name}\t{reg.plugin}{where}")
        if args.options:
            try:
                lines = _options_of(registry, args.what, name).describe() or ["(no options)"]
            except MissingExtraError as exc:  # listed all the same: a light install still shows what it lacks
                lines = [f"(options not shown: {exc})"]
            for line in lines:
                print(f"    {line}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Each task in turn, all reported: an error is one line on stderr and the others are still checked."""
    registry = get_registry()
    failed = 0
    for given in args.files:
        try:
            path = registered_or_path(given, registry, "validate")
            config = load_task_file(path)
            check_registered_name(config, given, registry, "validate")
            check_against_registry(config, registry)
            data = _check_data(config, registry, args.data_dir)
        except HarnessError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
        else:
            where = f", {path}" if given in registry.tasks else ""
            print(f"ok: {given} (task {config.task}, version {config.version}{where}{data})")
    return 2 if failed else 0


def _check_data(config: TaskConfig, registry: Registry, data_dir: str | None) -> str:
    """``; data: ...`` when the task's loader checks data (``takes_options(check_data=...)``), else nothing."""
    check = getattr(registry.loader(config.loader), "check_data", None)
    if check is None:
        return ""
    root, _ = resolve_data_dir(data_dir)
    kwargs: dict[str, Any] = {}
    if "prepare" in inspect.signature(check).parameters:
        kind = registry.kind(config.request)
        kwargs["prepare"] = functools.partial(kind.prepare_data, config)
    with naming_task_file(config):
        return f"; data: {check(config.data, root, **kwargs)}"


def cmd_plugins(args: argparse.Namespace) -> int:
    print(json.dumps(get_registry().plugins, indent=2))
    return 0
