"""Turn ``--tasks`` entries into validated task configurations checked against the installed plugins."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.data.paths import current_task_file, reading_task_file
from harness.errors import HarnessError, TaskConfigError
from harness.extras import require_extras
from harness.files import same_file
from harness.kinds.base import RequestKind
from harness.registry.manager import Registry, get_registry
from harness.registry.task_validation import load_task_file
from harness.scoring.base import Scorer
from harness.task_config import TaskConfig


@dataclass
class ResolvedTask:
    """A validated task with its scorers. A decoding sweep becomes one resolved task per setting (``variant``),
    each with its own response store and its own row in the results: ``wmt14-en-de@top_p=0.9``."""

    config: TaskConfig
    #: The kind of request the task sends (``config.request``), looked up once in the registry that resolved it.
    kind: RequestKind
    scorers: list[Scorer]
    variant: str | None = None

    @property
    def name(self) -> str:
        return f"{self.config.task}@{self.variant}" if self.variant else self.config.task


def registered_or_path(name_or_path: str, registry: Registry, argument: str = "--tasks") -> Path:
    """Where a task entry points: a registered task's YAML file, else the entry itself as a path to a ``.yaml`` or
    ``.yml`` file (not checked to exist: the caller decides who reports a missing file). The one place that reads
    a task name-or-path, for ``--tasks``, ``harness import --task``, run plans and ``harness validate``."""
    if name_or_path in registry.tasks:
        return Path(str(registry.tasks[name_or_path].obj))
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        return path
    known = ", ".join(sorted(registry.tasks)) or "none"
    raise HarnessError(
        f"{argument}: unknown task '{name_or_path}' (registered: {known}; or give a path to a .yaml file)"
    )


def task_path(name_or_path: str, registry: Registry) -> Path:
    """A registered task name, or a path to a task YAML file that exists."""
    path = registered_or_path(name_or_path, registry)
    if name_or_path not in registry.tasks and not path.is_file():
        raise HarnessError(f"--tasks: task file {path} does not exist")
    return path


def check_registered_name(config: TaskConfig, given: str, registry: Registry, argument: str = "--tasks") -> None:
    """A task file given by path may not reuse the name of a registered task from another file.

    Why refuse rather than let one win: results, stores and leaderboards know a task by its name only, so two
    different files under one name would be merged as if they were the same task. The registered file itself, given
    by path, is fine."""
    registered = registry.tasks.get(config.task)
    if given in registry.tasks or registered is None:
        return
    theirs = Path(str(registered.obj))
    if same_file(theirs, Path(given)):
        return
    raise HarnessError(
        f"{argument}: {given} declares task '{config.task}', the name of the task {theirs} registered by plugin "
        f"{registered.plugin}; rename the task in {given} (results would be taken for the registered task's)"
    )


def check_against_registry(config: TaskConfig, registry: Registry) -> list[Scorer]:
    """Everything a task names must be installed, and every scorer must accept its arguments and request kind."""
    file = config.source_file
    if config.loader not in registry.loaders:
        known = ", ".join(sorted(registry.loaders)) or "none"
        raise TaskConfigError(file, "loader", f"a registered data loader ({known}), got '{config.loader}'")

    def scores_this_kind(cls: type[Scorer]) -> bool:
        return not cls.request_kinds or config.request in cls.request_kinds

    scorers: list[Scorer] = []
    for i, spec in enumerate(config.scorers):
        if spec.name not in registry.scorers:
            # Only the scorers that could score this task: the full list outgrows a one-line error.
            fitting = [name for name in sorted(registry.scorers) if scores_this_kind(registry.scorer(name))]
            known = ", ".join(fitting) or "none"
            raise TaskConfigError(
                file, f"scorers[{i}]", f"a registered scorer for {config.request} ({known}), got '{spec.name}'"
            )
        cls = registry.scorer(spec.name)
        if not scores_this_kind(cls):
            kinds = ", ".join(sorted(cls.request_kinds))
            raise TaskConfigError(
                file, f"scorers[{i}]", f"a scorer for '{config.request}' requests; '{spec.name}' scores {kinds}"
            )
        try:
            scorer = cls(**spec.args)
            scorer.task_params = dict(config.params)
            scorers.append(scorer)
        except HarnessError as exc:
            raise TaskConfigError(file, f"scorers[{i}].args", str(exc)) from exc
        except TypeError as exc:
            raise TaskConfigError(file, f"scorers[{i}].args", f"arguments '{spec.name}' accepts ({exc})") from exc
    return scorers


def resolve_tasks(
    names: list[str], overrides: Mapping[str, Any], registry: Registry, *, expand_decoding: bool = True
) -> list[ResolvedTask]:
    """Load and check each task. With ``expand_decoding`` (model runs), a task whose kind has variants (a
    ``generate`` task's decoding settings) becomes one task per variant; human-only runs keep one task."""
    resolved = []
    for name in names:
        config = load_task_file(task_path(name, registry), overrides)
        check_registered_name(config, name, registry)
        scorers = check_against_registry(config, registry)
        kind = registry.kind(config.request)
        variants = kind.variants(config) if expand_decoding else []
        for label, variant in variants:
            # Scorers hold per-run state (caches, notes), so each variant gets its own instances.
            resolved.append(ResolvedTask(variant, kind, check_against_registry(variant, registry), label))
        if not variants:
            resolved.append(ResolvedTask(config, kind, scorers))
    seen = [r.name for r in resolved]
    dupes = sorted({t for t in seen if seen.count(t) > 1})
    if dupes:
        raise HarnessError(f"--tasks: task '{dupes[0]}' is given twice")
    return resolved


def require_scorer_extras(tasks: list[ResolvedTask]) -> None:
    """Refuse, in one line and before any data loads, a task whose scorer needs an extra that is not installed
    (``harness.extras``): ``run``, ``import`` and ``score`` call it; ``validate`` does not, so a task file can be
    checked on a light install."""
    for task in tasks:
        for scorer in task.scorers:
            require_extras(scorer.required_extras(), f"scorer '{scorer.name}' of task '{task.name}'")


@contextlib.contextmanager
def naming_task_file(config: TaskConfig, loader: object = None) -> Iterator[None]:
    """Every ``HarnessError`` raised inside (a loader reading the task's data) names the task file first, so that a
    data error says which task file's mapping read it: ``error: my-task.yaml: data/norms.csv: line 3: ...``.

    Only for loaders of users' own data (those that declare ``check_data``, the generic loaders), whose data and
    mapping the task file describes; ``loader`` None means such a loader. A built-in loader's errors already name its
    data set. The error keeps its type where it can; a message that already starts with the file is left as it is.

    Inside, the task file is also where ``task:`` data paths are relative to (``harness.data.paths``): every loader
    call passes through here, and a loader's signature has no room for it."""
    try:
        with reading_task_file(_task_file(config)):
            yield
    except HarnessError as exc:
        file = config.source_file
        message = str(exc)
        if not file or message.startswith(f"{file}:"):
            raise
        if loader is not None and getattr(loader, "check_data", None) is None:
            raise
        prefixed = f"{file}: {message}"
        try:
            renamed = type(exc)(prefixed)
        except TypeError:  # an error type whose constructor takes more than a message
            renamed = HarnessError(prefixed)
        if str(renamed) != prefixed:
            renamed = HarnessError(prefixed)
        raise renamed from exc.__cause__


def _task_file(config: TaskConfig) -> Path | None:
    """The file ``config`` was read from. For one read back from a run's results (``harness score``, whose
    ``source_file`` names ``results.json``): the task file the run recorded (``data_sources.<task>.task_file``, set
    around the call by the re-scoring), else the registered task of its name, the only file it can have come from
    (``check_registered_name``); the re-scored data's hash is checked against the run's all the same."""
    if config.source_file and Path(config.source_file).is_file():
        return Path(config.source_file)
    recorded = current_task_file()
    if recorded is not None or not config.source_file:
        return recorded
    registered = get_registry().tasks.get(config.task)
    return Path(str(registered.obj)) if registered is not None else None
