"""What one ``harness run`` is asked to do (tasks, model, limits, where to write, who answers), and the folder it
writes.

Why its own module: the command line, sweeps, imports and re-scoring all build these options; keeping them apart
from the runner lets them do so without importing how a run is carried out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.executors.base import ExecutorOptions
from harness.models import ModelSpec

#: The run folder and ``config.model`` of a run without a model (the human reference row).
HUMAN_ONLY_LABEL = "human"


@dataclass
class RunOptions:
    tasks: list[str]
    model: ModelSpec | None
    #: ``--task-args``: applied to every task.
    task_args: Mapping[str, Any] = field(default_factory=dict)
    #: Task name (as given in ``tasks``) -> its own task arguments, applied over ``task_args`` key by key (a run
    #: plan's ``tasks: [{name: ..., task_args: {...}}]``).
    per_task_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    limit: int | None = None
    seed: int = 0
    output_dir: Path = Path("runs")
    data_dir: str | None = None
    #: Who answers the missing requests (``--executor``); the results do not depend on it.
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)
    #: The run's folder under ``output_dir``; default ``<kind>__<name>`` (a sweep names two configurations of one
    #: model apart with it).
    folder: str | None = None

    @property
    def run_dir(self) -> Path:
        return self.output_dir / (self.folder or run_slug(self.model))

    def args_for(self, task: str) -> dict[str, Any]:
        """The task arguments of ``task`` (a name as given in ``tasks``): its own over the run's, key by key."""
        return {**self.task_args, **self.per_task_args.get(task, {})}


def run_slug(model: ModelSpec | None) -> str:
    if model is None:
        return HUMAN_ONLY_LABEL
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{model.kind}__{model.name}").strip("_")
