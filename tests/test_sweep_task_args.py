"""A run plan's per-task ``task_args`` (``tasks: [provo, {name: wmt14-en-de, task_args: {...}}]``): read from the
plan, merged over the plan's and a model's ``task_args`` key by key, checked before anything loads, and used by the
run. The global form keeps working (``test_executors.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.executors import ExecutorOptions
from harness.models import ModelSpec
from harness.registry.manager import get_registry
from harness.run.checks import check_run
from harness.run.options import RunOptions
from harness.run.sweep import read_plan
from tests.conftest import CliResult
from tests.helpers import require_provo

PLAN = """
output_dir: {out}
tasks:
  - provo
  - name: wmt14-en-de
    task_args: {{decoding: [ancestral, top_p=0.9], n_samples: 3}}
task_args: {{n_samples: 4, max_new_tokens: 8}}
limit: 3
human_only: true
models:
  - model: mock:a
  - model: mock:b
    task_args: {{n_samples: 5}}
"""


def _plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return path


def test_a_tasks_own_args_apply_over_the_plans_and_the_models(tmp_path: Path) -> None:
    first, second, human = read_plan(_plan(tmp_path, PLAN.format(out=tmp_path)), ExecutorOptions())
    assert first.tasks == ["provo", "wmt14-en-de"]
    assert first.per_task_args == {"wmt14-en-de": {"decoding": ["ancestral", "top_p=0.9"], "n_samples": 3}}
    assert first.args_for("provo") == {"n_samples": 4, "max_new_tokens": 8}
    assert first.args_for("wmt14-en-de") == {
        "n_samples": 3,
        "max_new_tokens": 8,
        "decoding": ["ancestral", "top_p=0.9"],
    }
    # A model's task_args go over the plan's for every task; the task's own still win on their keys.
    assert second.args_for("provo") == {"n_samples": 5, "max_new_tokens": 8}
    assert second.args_for("wmt14-en-de")["n_samples"] == 3
    assert human.model is None and human.per_task_args == first.per_task_args


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ("[provo, {name: wmt14-en-de, task_arg: {n_samples: 3}}]", "field 'tasks[1]': unknown field 'task_arg' "
         "(known: name, task_args)"),
        ("[provo, {task_args: {n_samples: 3}}]", "field 'tasks[1]': expected a task name or {name: TASK, "
         "task_args: {...}}, got {'task_args': {'n_samples': 3}}"),
        ("[{name: provo, task_args: [n_samples=3]}]", "field 'tasks[0]'.task_args: expected a mapping of key: value, "
         "got ['n_samples=3']"),
        ("[provo, {name: provo, task_args: {n_samples: 3}}]", "field 'tasks[1]': task 'provo' is listed twice"),
        ("[provo, 3]", "field 'tasks[1]': expected a task name or {name: TASK, task_args: {...}}, got 3"),
    ],
)  # fmt: skip
def test_per_task_errors_name_the_plan_and_the_entry(tmp_path: Path, tasks: str, message: str) -> None:
    path = _plan(tmp_path, f"tasks: {tasks}\nmodels: [mock:a]\n")
    with pytest.raises(HarnessError) as caught:
        read_plan(path, ExecutorOptions())
    assert str(caught.value) == f"{path}: {message}"


def test_a_bad_per_task_argument_is_caught_before_data_loads(tmp_path: Path) -> None:
    """The task's own arguments go through the task file's checks with the rest of the run's, before any data."""
    path = _plan(tmp_path, "tasks: [provo, {name: wmt14-en-de, task_args: {n_samples: 0}}]\nmodels: [mock:a]\n")
    (options,) = read_plan(path, ExecutorOptions())
    with pytest.raises(HarnessError, match=r"wmt14-en-de.*n_samples") as caught:
        check_run(options, get_registry())
    assert "\n" not in str(caught.value)


def test_arguments_for_a_task_not_in_the_run_are_refused() -> None:
    options = RunOptions(tasks=["provo"], model=ModelSpec("mock", "a"), per_task_args={"provo-paper": {"n_samples": 2}})
    with pytest.raises(HarnessError, match=r"^task arguments for 'provo-paper': not a task of this run \(provo\)$"):
        check_run(options, get_registry())


def test_a_sweep_runs_each_task_with_its_own_args(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """A decoding sweep for the generation task only: Provo (which has no decoding) runs beside it, each with its own
    sample count; the same numbers as a plain run of each task with those arguments."""
    require_provo()
    cli("sweep", str(_plan(tmp_path, PLAN.format(out=tmp_path / "sweep"))))
    results = json.loads((tmp_path / "sweep" / "mock__a" / "results.json").read_text())
    assert sorted(results["configs"]) == ["provo", "wmt14-en-de@ancestral", "wmt14-en-de@top_p=0.9"]
    assert results["configs"]["provo"]["params"]["n_samples"] == 4
    variants = ("wmt14-en-de@ancestral", "wmt14-en-de@top_p=0.9")
    assert {results["configs"][t]["params"]["n_samples"] for t in variants} == {3}
    assert results["config"]["task_args"] == {"n_samples": 4, "max_new_tokens": 8}
    plain = tmp_path / "plain"
    common = ["--model", "mock:a", "--limit", "3", "--output-dir", str(plain)]
    cli("run", "--tasks", "provo", "--task-args", "n_samples=4,max_new_tokens=8", *common)
    provo = json.loads((plain / "mock__a" / "results.json").read_text())
    assert provo["metrics"]["provo"] == results["metrics"]["provo"]
    cli("run", "--tasks", "wmt14-en-de", "--task-args", "n_samples=3,max_new_tokens=8,decoding=ancestral;top_p=0.9",
        *common)  # fmt: skip
    wmt = json.loads((plain / "mock__a" / "results.json").read_text())
    for task in variants:
        assert wmt["metrics"][task] == results["metrics"][task]
    human = json.loads((tmp_path / "sweep" / "human" / "results.json").read_text())
    assert human["configs"]["wmt14-en-de"]["params"]["n_samples"] == 3
