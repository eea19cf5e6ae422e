"""Where a task comes from, for plugin authors and users (trap 6): ``harness validate`` takes registered task names
as well as files, ``harness ls tasks`` shows each task's plugin and YAML file, and a task file given by path that
takes the name of a registered task from another file is refused (on ``--tasks``, in run plans, on ``import
--task`` and in ``validate``), with one line naming both files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import HarnessError
from harness.hookspecs import hookimpl
from harness.registry.manager import _collect, get_plugin_manager, get_registry
from harness.registry.task_loading import resolve_tasks
from tests.conftest import run_main
from tests.helpers import REPO, require_provo


def registered_file(name: str) -> Path:
    return Path(str(get_registry().tasks[name].obj))


def copy_of_provo(folder: Path, task: str = "provo") -> Path:
    """The built-in Provo task file copied to ``folder`` (as a user starting their own task does), named ``task``."""
    raw = yaml.safe_load((REPO / "harness" / "tasks" / "provo.yaml").read_text())
    raw["task"] = task
    path = folder / "my-provo.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_ls_tasks_shows_the_plugin_and_the_yaml_file() -> None:
    result = run_main("ls", "tasks")
    lines = result.stdout.splitlines()
    assert f"provo\tharness.plugins.builtin\t{REPO / 'harness' / 'tasks' / 'provo.yaml'}" in lines
    assert registered_file("provo") == REPO / "harness" / "tasks" / "provo.yaml"
    assert len(lines) == len(get_registry().tasks)
    for line in lines:
        name, plugin, path = line.split("\t")
        assert plugin == get_registry().tasks[name].plugin and Path(path).is_file()
    # --options keeps the same first line per task, then the options indented.
    with_options = run_main("ls", "tasks", "--options").stdout.splitlines()
    assert f"provo\tharness.plugins.builtin\t{REPO / 'harness' / 'tasks' / 'provo.yaml'}" in with_options


def test_validate_takes_registered_names_and_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    out = run_main("validate", "provo", "tasks/provo-paper.yaml").stdout.splitlines()
    version = yaml.safe_load((REPO / "harness" / "tasks" / "provo.yaml").read_text())["version"]
    assert out[0] == f"ok: provo (task provo, version {version}, {REPO / 'harness' / 'tasks' / 'provo.yaml'})"
    assert out[1].startswith("ok: tasks/provo-paper.yaml (task provo-paper, version ") and out[1].endswith(")")


def test_validate_reports_an_unknown_name_and_still_checks_the_others() -> None:
    result = run_main("validate", "provoo", "provo", check=False)
    assert result.returncode == 2
    assert result.stdout.startswith("ok: provo (task provo,")
    err = result.stderr.strip()
    assert "\n" not in err
    assert err.startswith("error: validate: unknown task 'provoo' (registered: asset-test, asset-valid, ")
    assert err.endswith("; or give a path to a .yaml file)")


def test_a_path_may_not_take_a_registered_tasks_name(tmp_path: Path) -> None:
    mine = copy_of_provo(tmp_path)
    theirs = registered_file("provo")
    both = f"{mine} declares task 'provo', the name of the task {theirs} registered by plugin harness.plugins.builtin"
    with pytest.raises(HarnessError, match=f"^--tasks: {both}; rename the task in "):
        resolve_tasks([str(mine)], {}, get_registry())
    result = run_main("run", "--tasks", str(mine), "--human-only", "--output-dir", str(tmp_path / "out"), check=False)
    assert result.returncode == 2 and result.stderr.startswith(f"error: --tasks: {both};")
    assert result.stderr.count("\n") == 1 and not (tmp_path / "out").exists()
    result = run_main("validate", str(mine), check=False)
    assert result.returncode == 2 and result.stderr.startswith(f"error: validate: {both};")
    # Renamed, the same file is a task of its own.
    renamed = copy_of_provo(tmp_path, task="my-provo")
    assert run_main("validate", str(renamed)).stdout.startswith(f"ok: {renamed} (task my-provo, version ")


def test_a_sweep_plan_and_an_import_refuse_it_too(tmp_path: Path) -> None:
    mine = copy_of_provo(tmp_path)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump({"tasks": [str(mine)], "models": ["mock:a"], "limit": 1, "output_dir": str(tmp_path / "o")})
    )
    result = run_main("sweep", str(plan), check=False)
    assert result.returncode == 2 and f"{mine} declares task 'provo'" in result.stderr
    data = require_provo()
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("")
    result = run_main("import", str(outputs), "--task", str(mine), "--name", "x", "--data-dir", str(data), check=False)
    assert result.returncode == 2 and f"error: --tasks: {mine} declares task 'provo'" in result.stderr


def test_the_registered_file_itself_may_be_given_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (task,) = resolve_tasks([str(REPO / "harness" / "tasks" / "provo.yaml")], {}, get_registry(), expand_decoding=False)
    assert task.name == "provo"
    # Another spelling of the same file (a relative path, a link) is the same file.
    monkeypatch.chdir(REPO)
    resolve_tasks(["tasks/provo.yaml"], {}, get_registry(), expand_decoding=False)
    link = tmp_path / "link.yaml"
    link.symlink_to(REPO / "harness" / "tasks" / "provo.yaml")
    resolve_tasks([str(link)], {}, get_registry(), expand_decoding=False)


def _registering(path: Path) -> Any:
    class Plugin:
        @staticmethod
        @hookimpl
        def register_tasks(register: Callable[[Any], None]) -> None:
            register(path)

    return Plugin


def test_two_plugins_registering_one_name_from_two_files_are_refused(tmp_path: Path) -> None:
    pm = get_plugin_manager(load_entry_points=False)
    pm.register(_registering(copy_of_provo(tmp_path)), name="other-plugin")
    with pytest.raises(
        HarnessError, match="^task 'provo' is registered twice: by harness.plugins.builtin and by other-plugin$"
    ):
        _collect(pm)


def test_the_same_task_file_registered_twice_is_one_task(tmp_path: Path) -> None:
    link = tmp_path / "provo.yaml"
    link.symlink_to(REPO / "harness" / "tasks" / "provo.yaml")
    for path in (REPO / "harness" / "tasks" / "provo.yaml", link):
        pm = get_plugin_manager(load_entry_points=False)
        pm.register(_registering(path), name="again")
        registry = _collect(pm)
        assert registry.tasks["provo"].plugin == "harness.plugins.builtin"
        assert Path(str(registry.tasks["provo"].obj)).samefile(REPO / "harness" / "tasks" / "provo.yaml")
