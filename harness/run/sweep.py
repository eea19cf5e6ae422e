"""Several model configurations over the same tasks in one command: ``harness run --model A --model B`` or
``harness sweep PLAN.yaml``.

Why here and not in a shell loop: every configuration is checked (model kind, arguments, tasks, what the model
answers) before the first model loads, so a typo in the fifth model costs a second, not four models' runs; the
configurations share one Ray connection under ``--executor ray``; and a configuration that fails does not stop the
others. Each configuration is an ordinary run with its own output folder (``<output_dir>/<kind>__<name>``), so
``harness leaderboard <output_dir>/*`` folds the whole sweep.

A plan file::

    output_dir: runs/sweep          # default: runs
    tasks:                          # or [provo, asset-valid], or "provo,asset-valid"
      - provo
      - name: asset-valid           # a task with its own task_args, over the plan's (and a model's) key by key
        task_args: {decoding: [ancestral, top_p=0.9]}
    task_args: {n_samples: 10}      # every task takes them
    limit: 20                       # optional
    seed: 0
    data_dir: /data                 # optional
    human_only: true                # also the human-only reference row
    models:
      - model: hf:smollm2-135m
        device: cpu                 # optional: auto (default), cpu, cuda
        batch_size: auto            # optional
      - model: hf:smollm2-135m
        model_args: {dtype: bfloat16}
        folder: smollm2-bf16        # optional: the run's folder (default <kind>__<name>, here taken)
      - model: mock:baseline
        task_args: {n_samples: 20}  # optional, merged over the plan's task_args
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError, one_line
from harness.executors import ExecutorOptions
from harness.files import read_utf8
from harness.models import ModelSpec
from harness.options import parse_key_values
from harness.registry.manager import Registry, get_registry
from harness.run.checks import check_run
from harness.run.options import RunOptions
from harness.run.runner import run
from harness.task_config import load_yaml, yaml_problem

PLAN_KEYS = ("output_dir", "tasks", "task_args", "limit", "seed", "data_dir", "human_only", "models")
MODEL_KEYS = ("model", "model_args", "device", "batch_size", "task_args", "folder")
TASK_KEYS = ("name", "task_args")


def parse_model(text: str, model_args: str | dict[str, Any] | None, device: str, batch_size: str) -> ModelSpec:
    """``KIND:NAME`` and its arguments (``k=v,...`` text, or a mapping from a plan file) as a model spec."""
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise HarnessError(f"--model: expected KIND:NAME (e.g. hf:smollm2-135m), got '{text}'")
    if isinstance(model_args, dict):
        args = {str(k): _arg_text(v) for k, v in model_args.items()}
    else:
        args = parse_key_values(model_args, "--model-args")
    return ModelSpec(kind=kind, name=name, args=args, device=device, batch_size=batch_size)


def _arg_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def pair_model_args(models: list[str], model_args: list[str] | None) -> list[str | None]:
    """``--model-args`` for each ``--model``: none, one for all, or one per model in the same order."""
    given = model_args or []
    if not given:
        return [None] * len(models)
    if len(given) == 1:
        return [given[0]] * len(models)
    if len(given) != len(models):
        raise HarnessError(
            f"--model-args: given {len(given)} times for {len(models)} models; give it once (for every model) or "
            "once per --model, in the same order"
        )
    return list(given)


def read_plan(path: Path, executor: ExecutorOptions) -> list[RunOptions]:
    """The runs a plan file lists, one per model (and one human-only run if asked); errors name the field."""
    where = str(path)
    try:
        plan = load_yaml(read_utf8(path, "run plan"))
    except yaml.YAMLError as exc:
        raise HarnessError(f"{where}: not valid YAML{yaml_problem(exc)}") from None
    if not isinstance(plan, dict):
        raise HarnessError(f"{where}: expected a mapping with 'tasks' and 'models', got {type(plan).__name__}")
    unknown = sorted(set(plan) - set(PLAN_KEYS))
    if unknown:
        raise HarnessError(f"{where}: unknown field '{unknown[0]}' (known: {', '.join(PLAN_KEYS)})")
    tasks, per_task_args = _tasks(plan.get("tasks"), where)
    task_args = _mapping(plan.get("task_args"), f"{where}: field 'task_args'")
    limit = plan.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise HarnessError(f"{where}: field 'limit': expected a positive integer, got {limit!r}")
    seed = plan.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise HarnessError(f"{where}: field 'seed': expected an integer, got {seed!r}")
    base = RunOptions(
        tasks=tasks,
        model=None,
        task_args=task_args,
        per_task_args=per_task_args,
        limit=limit,
        seed=seed,
        output_dir=Path(str(plan.get("output_dir", "runs"))),
        data_dir=str(plan["data_dir"]) if plan.get("data_dir") is not None else None,
        executor=executor,
    )
    models = plan.get("models") or []
    if not isinstance(models, list):
        raise HarnessError(f"{where}: field 'models': expected a list of {{model: KIND:NAME, ...}}")
    runs: list[RunOptions] = []
    for i, entry in enumerate(models):
        field = f"{where}: field 'models[{i}]'"
        if isinstance(entry, str):
            entry = {"model": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            raise HarnessError(f"{field}: expected {{model: KIND:NAME, model_args: {{...}}}}, got {entry!r}")
        unknown = sorted(set(entry) - set(MODEL_KEYS))
        if unknown:
            raise HarnessError(f"{field}: unknown field '{unknown[0]}' (known: {', '.join(MODEL_KEYS)})")
        model_args = entry.get("model_args")
        if model_args is not None and not isinstance(model_args, dict | str):
            raise HarnessError(f"{field}.model_args: expected a mapping, got {model_args!r}")
        device = str(entry.get("device", "auto"))
        if device not in ("auto", "cpu", "cuda"):
            raise HarnessError(f"{field}.device: expected auto, cpu or cuda, got {device!r}")
        batch_size = str(entry.get("batch_size", "auto"))
        if batch_size != "auto" and not (batch_size.isdigit() and int(batch_size) > 0):
            raise HarnessError(f"{field}.batch_size: expected a positive integer or auto, got {batch_size!r}")
        spec = parse_model(entry["model"], model_args, device, batch_size)
        own_args = _mapping(entry.get("task_args"), f"{field}.task_args")
        folder = entry.get("folder")
        if folder is not None and (not isinstance(folder, str) or not re.fullmatch(r"[A-Za-z0-9._-]+", folder)):
            raise HarnessError(f"{field}.folder: expected a folder name (letters, digits, . _ -), got {folder!r}")
        runs.append(replace(base, model=spec, task_args={**task_args, **own_args}, folder=folder))
    if plan.get("human_only"):
        runs.append(base)
    if not runs:
        raise HarnessError(f"{where}: no run: list models under 'models' (or set human_only: true)")
    return runs


def _tasks(value: Any, where: str) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The plan's task names, and the ``task_args`` of each task listed as ``{name: TASK, task_args: {...}}``."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not value:
        raise HarnessError(f"{where}: field 'tasks': expected a list of task names or YAML files, got {value!r}")
    names: list[str] = []
    per_task: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(value):
        field = f"{where}: field 'tasks[{i}]'"
        own: dict[str, Any] = {}
        name = entry
        if isinstance(entry, dict):
            unknown = sorted(set(entry) - set(TASK_KEYS))
            if unknown:
                raise HarnessError(f"{field}: unknown field '{unknown[0]}' (known: {', '.join(TASK_KEYS)})")
            name, own = entry.get("name"), _mapping(entry.get("task_args"), f"{field}.task_args")
        if not isinstance(name, str) or not name.strip():
            raise HarnessError(f"{field}: expected a task name or {{name: TASK, task_args: {{...}}}}, got {entry!r}")
        name = name.strip()
        if name in names:
            raise HarnessError(f"{field}: task '{name}' is listed twice")
        names.append(name)
        if own:
            per_task[name] = own
    return names, per_task


def _mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HarnessError(f"{field}: expected a mapping of key: value, got {value!r}")
    return {str(k): v for k, v in value.items()}


def run_all(
    plan: list[RunOptions],
    report: Callable[[RunOptions, dict[str, Any]], None],
    registry: Registry | None = None,
) -> list[tuple[RunOptions, str]]:
    """Check every run, then run them in order; ``report`` gets each finished run's results. Returns the runs
    that failed with their one-line errors (the others' results are written regardless)."""
    registry = registry or get_registry()
    if len(plan) == 1:  # a single run's error is the command's error, as it always was
        report(plan[0], run(plan[0], registry))
        return []
    folders = [options.run_dir for options in plan]
    twice = sorted({str(f) for f in folders if folders.count(f) > 1})
    if twice:
        raise HarnessError(
            f"two runs would write the same folder {twice[0]} (the same model kind and name): give each configuration "
            "its own 'folder' in a plan file (harness sweep), or its own --output-dir"
        )
    for options in plan:
        check_run(options, registry)
    failed: list[tuple[RunOptions, str]] = []
    for options in plan:
        label = options.model.label if options.model else "human-only"
        try:
            results = run(options, registry)
        except HarnessError as exc:
            print(f"error: {label}: {exc}", file=sys.stderr)
            failed.append((options, one_line(str(exc), 300)))
            continue
        report(options, results)
    return failed
