"""A task's instances for a run: read by the task's loader, narrowed to what the model covers and to ``--limit``.

Why its own module: a run, ``harness score`` and the benchmarks read a task's data the same way, before any model
loads, so that a re-scored run sees the very instances the original run answered.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from pathlib import Path

from harness.data.loaders import LoadedData
from harness.data.paths import current_task_file
from harness.errors import HarnessError
from harness.instances import Instance
from harness.kinds.words import report_cuts
from harness.models import ModelSpec
from harness.registry.manager import Registry
from harness.registry.task_loading import ResolvedTask, naming_task_file


def load_task_data(
    task: ResolvedTask,
    registry: Registry,
    data_dir: Path,
    limit: int | None,
    cover: Callable[[list[Instance]], Collection[str] | None] | None = None,
    uncovered: Collection[str] = (),
) -> LoadedData:
    """The task's instances: those the model can answer (``cover`` of the loaded instances: the ids it has
    outputs for, None for all) and not ``uncovered`` (what a re-scored run recorded as missing), then the first
    ``limit`` of them.

    Instances left out because the model has no outputs for them are listed in the data source record
    (``missing``), so the results say which instances a partial import did not cover."""
    loader = registry.loader(task.config.loader)
    with naming_task_file(task.config, loader):
        data = loader(task.config.data, data_dir)
        read_beside = current_task_file()
    if read_beside is not None and getattr(loader, "check_data", None) is not None:
        # Where a user's task file was, for task: data paths when the run is re-scored (harness score).
        data = LoadedData(data.instances, data.data_hash, {**data.source, "task_file": str(read_beside)})
    if not data.instances:
        raise HarnessError(f"task {task.config.task}: loader '{task.config.loader}' found no instances")
    data = registry.kind(task.config.request).prepare_data(task.config, data)
    report_cuts(task.config.task, data)
    ids = [inst.id for inst in data.instances]
    if len(set(ids)) != len(ids):
        raise HarnessError(f"task {task.config.task}: loader '{task.config.loader}' gave duplicate instance ids")
    source = {**data.source, "n_total": len(ids)}
    instances = list(data.instances)
    keep: set[str] | None = None
    unmatched: list[str] = []
    if cover is not None:
        offered = cover(instances)
        if offered is not None:
            keep = set(offered)
            unmatched = sorted(keep.difference(ids))
    if uncovered:
        keep = (set(ids) if keep is None else keep) - set(uncovered)
    if keep is not None:
        instances = [inst for inst in instances if inst.id in keep]
        if not instances:
            raise HarnessError(
                f"task {task.config.task}: the model has outputs for none of its {len(ids)} instances "
                f"(its ids look like {ids[0]!r}; the outputs' like {min(keep, default=None)!r})"
            )
        missing = [i for i in ids if i not in keep]
        if missing:
            source["missing"] = {"n": len(missing), "ids": missing}
    if unmatched:
        source["unmatched_outputs"] = {"n": len(unmatched), "ids": unmatched}
    if limit is not None:
        instances = instances[:limit]
    elif len(instances) == len(ids) and not unmatched:
        return data
    return LoadedData(instances, data.data_hash, source)


def report_coverage(task: str, data: LoadedData, model: ModelSpec) -> None:
    """Say on stderr what a partial model covers: instances without outputs, outputs matching no instance."""
    missing = data.source.get("missing", {}).get("n", 0)
    if missing:
        print(
            f"warning: task {task}: {model.label} has no outputs for {missing} of {data.source['n_total']} "
            f"instances; scored on the {data.source['n_total'] - missing} it has (listed in data_sources.missing)",
            file=sys.stderr,
        )
    unmatched = data.source.get("unmatched_outputs")
    if unmatched:
        print(
            f"warning: task {task}: {unmatched['n']} of {model.label}'s outputs match no instance "
            f"(e.g. {unmatched['ids'][0]!r}); they are not scored",
            file=sys.stderr,
        )
