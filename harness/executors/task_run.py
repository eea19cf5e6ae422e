"""One task of a run as answering and scoring see it: the resolved task, its instances, and where its responses are.

Why its own module: the executors fill a task's response store and scoring reads it back; both import this, and the
runner imports both, so this vocabulary sits below them and neither needs the runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.data.loaders import LoadedData
from harness.registry.task_loading import ResolvedTask


class ResponseSource(Protocol):
    """Where scoring reads each instance's record: the response store of a run, or a finished run's samples file
    when ``harness score`` re-scores it."""

    def __contains__(self, instance_id: str) -> bool: ...

    def get(self, instance_id: str) -> dict[str, Any]: ...


@dataclass
class TaskRun:
    task: ResolvedTask
    data: LoadedData
    store: ResponseSource | None = None
    timing: dict[str, float] = field(default_factory=dict)
    #: Which metrics each scorer reported (set when the task is scored), for the headline table.
    metrics_by_scorer: dict[str, list[str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.task.name
