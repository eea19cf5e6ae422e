"""Everything about a run that can be wrong before data or a model loads: the options, the task files (with each
task's own arguments), the model kind, its arguments, and whether it answers what the tasks ask.

Why its own module: a sweep checks every configuration this way before its first model loads, so a typo in the
fifth model costs a second, not four models' runs.
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.models import ModelAdapter, ModelSpec
from harness.registry.manager import Registry
from harness.registry.task_loading import ResolvedTask, require_scorer_extras, resolve_tasks
from harness.run.options import RunOptions


def check_run(options: RunOptions, registry: Registry) -> tuple[list[ResolvedTask], type[ModelAdapter] | None]:
    """The run's tasks and the model's adapter class, or a one-line error."""
    if not options.tasks:
        raise HarnessError("--tasks: no task given (expected comma-separated task names or task YAML files)")
    if options.limit is not None and options.limit < 1:
        raise HarnessError(f"--limit: expected a positive integer, got {options.limit}")
    options.executor.check()
    tasks = resolve_run_tasks(options, registry)
    require_scorer_extras(tasks)
    adapter_cls: type[ModelAdapter] | None = None
    if options.model is not None:
        adapter_cls = registry.model(options.model.kind)
        if len(adapter_cls.options):  # a typo in --model-args costs a second, not a data load (or a sweep's models)
            adapter_cls.options.parse(options.model.args, f"--model-args for {options.model.label}")
        check_model_answers(adapter_cls, options.model, tasks)
    return tasks, adapter_cls


def resolve_run_tasks(options: RunOptions, registry: Registry) -> list[ResolvedTask]:
    """Each task of the run, loaded with its own arguments over the run's (``RunOptions.args_for``); a model run
    expands a task's decoding variants."""
    expand = options.model is not None
    if not options.per_task_args:
        return resolve_tasks(options.tasks, options.task_args, registry, expand_decoding=expand)
    stray = sorted(set(options.per_task_args) - set(options.tasks))
    if stray:
        raise HarnessError(f"task arguments for '{stray[0]}': not a task of this run ({', '.join(options.tasks)})")
    resolved = [
        task
        for name in options.tasks
        for task in resolve_tasks([name], options.args_for(name), registry, expand_decoding=expand)
    ]
    names = [task.name for task in resolved]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise HarnessError(f"--tasks: task '{twice[0]}' is given twice")
    return resolved


def check_model_answers(adapter_cls: type[ModelAdapter], model: ModelSpec, tasks: list[ResolvedTask]) -> None:
    """Refuse, before the model loads, a task whose kind (or whose scorers' requests) the model cannot answer."""
    able = [k for k in sorted(adapter_cls.supported_requests) if not adapter_cls.refusal(model, k)]
    answers = ", ".join(able) or "nothing"
    for t in tasks:
        for need in t.kind.needs(t.config, t.scorers):
            why = adapter_cls.refusal(model, need.kind)
            if why:
                raise HarnessError(
                    f"model {model.label} cannot answer the '{need.kind}' requests that {need.needed_by} needs: "
                    f"{why} (it answers: {answers}){need.hint}"
                )
