"""The task schema: every kind of mistake is reported with the file, the field and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError, TaskConfigError
from harness.registry.manager import get_registry
from harness.registry.task_loading import check_against_registry, resolve_tasks
from harness.registry.task_validation import load_task_file, validate
from harness.task_config import apply_overrides, parse_task_args

GOOD = {
    "task": "toy",
    "version": 1,
    "loader": "provo",
    "request": "sample_words",
    "params": {"n_samples": 10},
    "scorers": ["tvd", {"name": "ece", "args": {"n_bins": 5}}],
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_config_fills_defaults() -> None:
    config = validate(GOOD, "toy.yaml")
    assert config.params == {
        "max_new_tokens": 32,
        "mode": "exact",
        "segmenter": "spaces",
        "n_samples": 10,
        "temperature": 1.0,
    }
    assert [s.name for s in config.scorers] == ["tvd", "ece"]
    assert config.scorers[1].args == {"n_bins": 5}


@pytest.mark.parametrize(
    ("change", "field", "expected"),
    [
        ({"task": "Bad Name"}, "task", "lower-case name"),
        ({"version": "one"}, "version", "non-negative integer"),
        ({"request": "translate"}, "request", "one of sample_words"),
        ({"params": {"n_samples": 0}}, "params.n_samples", "a positive integer, got 0"),
        ({"params": {"n_samples": "many"}}, "params.n_samples", "a positive integer, got 'many' (str)"),
        ({"params": {"temperature": -1}}, "params.temperature", "a positive number"),
        ({"params": {"mode": "greedy"}}, "params.mode", "one of 'exact', 'paper', 'whole'"),
        ({"params": {"top_k": 5}}, "params.top_k", "no such parameter"),
        ({"scorers": []}, "scorers", "non-empty list"),
        ({"scorers": [{"args": {}}]}, "scorers[0]", "a mapping with 'name'"),
        ({"scorers": [{"name": "tvd", "weight": 2}]}, "scorers[0].weight", "no such field"),
        ({"scorers": ["tvd", "tvd"]}, "scorers", "listed twice"),
        ({"extra": 1}, "extra", "no such field"),
        ({"data": [1]}, "data", "a mapping of loader options"),
    ],
)
def test_schema_errors_name_file_field_and_expectation(change: dict, field: str, expected: str) -> None:
    with pytest.raises(TaskConfigError) as info:
        validate({**GOOD, **change}, "tasks/toy.yaml")
    assert info.value.field == field
    assert str(info.value).startswith(f"tasks/toy.yaml: field '{field}': ")
    assert expected in str(info.value)


def test_missing_required_field() -> None:
    raw = {k: v for k, v in GOOD.items() if k != "loader"}
    with pytest.raises(TaskConfigError, match=r"toy.yaml: field 'loader': a value \(this field is required\)"):
        validate(raw, "toy.yaml")


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "task: toy\nversion: [1\n")
    with pytest.raises(TaskConfigError) as info:
        load_task_file(path)
    assert str(path) in str(info.value) and "line 3" in str(info.value)


def test_yaml_is_data_not_code(tmp_path: Path) -> None:
    path = write(tmp_path, "task: !!python/object/apply:os.system ['echo pwned']\nversion: 1\n")
    with pytest.raises(TaskConfigError, match="valid YAML"):
        load_task_file(path)


def test_task_args_override_params_and_scorer_args() -> None:
    overrides = parse_task_args("n_samples=40,temperature=0.5,mode=paper,ece.n_bins=15")
    assert overrides == {"n_samples": 40, "temperature": 0.5, "mode": "paper", "ece.n_bins": 15}
    config = validate(apply_overrides(GOOD, overrides, "toy.yaml"), "toy.yaml")
    assert config.params["n_samples"] == 40 and config.params["temperature"] == 0.5
    assert config.scorers[1].args == {"n_bins": 15}
    assert GOOD["params"] == {"n_samples": 10}, "overrides must not change the parsed file"


def test_task_args_errors() -> None:
    with pytest.raises(TaskConfigError, match="--task-args"):
        parse_task_args("n_samples")
    with pytest.raises(TaskConfigError, match="field 'params.n_samples': a positive integer"):
        validate(apply_overrides(GOOD, {"n_samples": "x"}, "toy.yaml"), "toy.yaml")
    with pytest.raises(TaskConfigError, match="a scorer listed in"):
        apply_overrides(GOOD, {"entropy.base": 2}, "toy.yaml")


def test_registry_checks_loader_scorer_and_args() -> None:
    registry = get_registry()
    with pytest.raises(TaskConfigError, match="field 'loader': a registered data loader"):
        check_against_registry(validate({**GOOD, "loader": "nope"}, "t.yaml"), registry)
    with pytest.raises(TaskConfigError, match=r"field 'scorers\[0\]': a registered scorer for"):
        check_against_registry(validate({**GOOD, "scorers": ["nope"]}, "t.yaml"), registry)
    with pytest.raises(TaskConfigError, match=r"field 'scorers\[0\].args'"):
        check_against_registry(
            validate({**GOOD, "scorers": [{"name": "ece", "args": {"bogus": 1}}]}, "t.yaml"), registry
        )


def test_builtin_tasks_validate() -> None:
    resolved = resolve_tasks(["provo", "provo-paper"], {}, get_registry())
    assert [r.config.task for r in resolved] == ["provo", "provo-paper"]
    assert resolved[0].config.params["n_samples"] == 1000
    assert resolved[1].config.params == {
        "max_new_tokens": 5,
        "mode": "paper",
        "segmenter": "spaces",
        "n_samples": 1000,
        "temperature": 1.0,
    }


def test_unknown_task_lists_known() -> None:
    with pytest.raises(HarnessError, match=r"unknown task 'nope' \(registered: .*provo"):
        resolve_tasks(["nope"], {}, get_registry())
