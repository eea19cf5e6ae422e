"""Data paths in a task file (``harness.data.paths``): under the data root, ``task:`` beside the task file,
``package:`` inside an installed package; and the generic loaders and ``harness validate`` reading them."""

from __future__ import annotations

import json
import re
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.data.paths import reading_task_file, resolve_data_file, resolve_data_paths
from harness.errors import DataNotFoundError, HarnessError
from harness.registry.manager import get_registry
from harness.registry.task_loading import naming_task_file
from harness.registry.task_validation import load_task_file


def write(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def resolve(*given: str, data_dir: Path) -> list[Path]:
    return resolve_data_paths(given, data_dir, "files")


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Callable[..., str]:
    """``package(files)``: a package of a name unique to the test, on ``sys.path``, holding ``files``."""

    def make(files: dict[str, str], where: Path | None = None) -> str:
        name = "dp_" + "".join(c if c.isalnum() else "_" for c in request.node.name)
        site = where if where is not None else tmp_path / "site"
        write(site / name / "__init__.py", "")
        for relative, text in files.items():
            write(site / name / relative, text)
        monkeypatch.syspath_prepend(str(site))
        monkeypatch.delitem(sys.modules, name, raising=False)
        return name

    return make


# ----------------------------------------------------------------------------------------------------- plain paths


def test_a_plain_path_is_under_the_data_root_or_absolute_or_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    under = write(root / "cloze" / "a.csv")
    elsewhere = write(tmp_path / "elsewhere" / "b.csv")
    write(tmp_path / "home" / "c.csv")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve("cloze/a.csv", str(elsewhere), "~/c.csv", data_dir=root) == [
        under,
        elsewhere,
        tmp_path / "home" / "c.csv",
    ]


def test_a_glob_is_expanded_in_sorted_order_and_only_the_written_part_is_a_pattern(tmp_path: Path) -> None:
    # A data root whose name looks like a pattern ("[v1]") is a folder, not a character class.
    root = tmp_path / "data [v1]"
    for name in ("b.csv", "a.csv", "sub/c.csv", "notes.txt"):
        write(root / "part" / name)
    assert resolve("part/*.csv", data_dir=root) == [root / "part" / "a.csv", root / "part" / "b.csv"]
    assert resolve("part/**/*.csv", data_dir=root)[-1] == root / "part" / "sub" / "c.csv"


def test_a_missing_plain_path_says_where_paths_are_looked_for(tmp_path: Path) -> None:
    with pytest.raises(
        DataNotFoundError, match=r"data option 'files': .*nope\.csv not found \(paths are under the data root"
    ):
        resolve("nope.csv", data_dir=tmp_path)
    with pytest.raises(DataNotFoundError, match=r"data option 'files': no file matches .*\*\.tsv \(paths are under"):
        resolve("*.tsv", data_dir=tmp_path)


# ------------------------------------------------------------------------------------------------------- task: paths


def test_a_task_path_is_relative_to_the_task_files_folder_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = tmp_path / "study"
    wanted = write(tasks / "data" / "norms.csv")
    write(tmp_path / "data" / "norms.csv")  # the same name under the data root and the working directory
    monkeypatch.chdir(tmp_path)
    with reading_task_file(Path("study") / "task.yaml"):  # a relative task file is taken from where it was given
        monkeypatch.chdir(tmp_path / "data")
        assert resolve("task:data/norms.csv", data_dir=tmp_path / "data") == [wanted]
        assert resolve("task:data/*.csv", data_dir=tmp_path / "data") == [wanted]
        assert [p.resolve() for p in resolve("task:../study/data/norms.csv", data_dir=tmp_path)] == [wanted]
        with pytest.raises(DataNotFoundError, match=r"task: paths are relative to the task file's folder, .*study"):
            resolve("task:data/other.csv", data_dir=tmp_path)


def test_a_task_path_without_a_task_file_is_one_clear_error(tmp_path: Path) -> None:
    write(tmp_path / "data" / "norms.csv")
    with pytest.raises(
        HarnessError, match=r"task:data/norms\.csv: a task: path is relative to the task file being read"
    ):
        resolve("task:data/norms.csv", data_dir=tmp_path)
    with reading_task_file(tmp_path / "t.yaml"), reading_task_file(None):
        with pytest.raises(HarnessError, match="there is none here"):
            resolve("task:data/norms.csv", data_dir=tmp_path)
        with reading_task_file(tmp_path / "t.yaml"):
            resolve("task:data/norms.csv", data_dir=tmp_path)


@pytest.mark.parametrize("given", ["task:", "task:  ", "task:/etc/passwd"])
def test_a_task_path_must_be_relative_and_not_empty(tmp_path: Path, given: str) -> None:
    with (
        reading_task_file(tmp_path / "t.yaml"),
        pytest.raises(HarnessError, match="expected task:PATH, relative to the task file"),
    ):
        resolve(given, data_dir=tmp_path)


# ---------------------------------------------------------------------------------------------------- package: paths


def test_a_package_path_is_a_file_of_the_installed_package(tmp_path: Path, package: Callable[..., str]) -> None:
    name = package({"data/a.csv": "a\n", "data/b.csv": "b\n"})
    site = tmp_path / "site" / name
    assert resolve(f"package:{name}/data/a.csv", data_dir=tmp_path) == [site / "data" / "a.csv"]
    assert resolve(f"package:{name}/data/*.csv", data_dir=tmp_path) == [
        site / "data" / "a.csv",
        site / "data" / "b.csv",
    ]
    assert (
        resolve_data_file(f"package:{name}/data/b.csv", tmp_path, "normalise.replacements") == site / "data" / "b.csv"
    )
    with pytest.raises(
        DataNotFoundError, match=rf"c\.csv not found \(inside package '{name}' at .*: is it package-data\?\)"
    ):
        resolve(f"package:{name}/data/c.csv", data_dir=tmp_path)


def test_a_package_that_is_not_installed_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(
        DataNotFoundError, match=r"package:no_such_pkg_xyz/a\.csv: no package 'no_such_pkg_xyz' is installed"
    ):
        resolve("package:no_such_pkg_xyz/a.csv", data_dir=tmp_path)
    with pytest.raises(DataNotFoundError, match="no package 'json.no_such_sub' is installed"):
        resolve("package:json.no_such_sub/a.csv", data_dir=tmp_path)


def test_a_package_whose_import_fails_is_one_line(tmp_path: Path, package: Callable[..., str]) -> None:
    name = package({})
    write(tmp_path / "site" / name / "__init__.py", "import no_such_dependency_xyz\n")
    with pytest.raises(
        HarnessError, match=rf"importing package '{name}' failed: No module named 'no_such_dependency_xyz'"
    ):
        resolve(f"package:{name}/a.csv", data_dir=tmp_path)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("package:/a.csv", "no package name before the '/'"),
        ("package:pkg", "a relative path after the prefix"),
        ("package:pkg/", "a relative path after the prefix"),
        ("package:pkg/../other/a.csv", "'..' leaves the package"),
        ("package:not-a-name/a.csv", "no package name before the '/'"),
    ],
)
def test_a_malformed_package_path_is_one_line(tmp_path: Path, given: str, message: str) -> None:
    with pytest.raises(HarnessError, match=re.escape(message)):
        resolve(given, data_dir=tmp_path)


def test_a_zipped_package_is_refused_because_its_data_is_not_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("dp_zipped_pkg/__init__.py", "")
        z.writestr("dp_zipped_pkg/data/a.csv", "a\n")
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "dp_zipped_pkg", raising=False)
    with pytest.raises(HarnessError, match="package 'dp_zipped_pkg' has no folder of files on disk"):
        resolve("package:dp_zipped_pkg/data/a.csv", data_dir=tmp_path)


# ------------------------------------------------------------------------------------------- through a task file

CLOZE_TASK = """task: beside-cloze
version: 1
loader: generic_cloze
data:
  files: task:data/guesses.csv
  join: {{files: "{items}", key: item}}
  group_by: item
  context: context
  human: {{shape: long, responses: guess, counts: n}}
  normalise: {{replacements: "task:data/spellings.csv"}}
request: sample_words
scorers: [tvd]
"""


def study(folder: Path, items: str) -> Path:
    write(folder / "data" / "guesses.csv", "item,guess,n\n1,mat,3\n1,matt,1\n2,tea,2\n")
    write(folder / "data" / "items.csv", "item,context\n1,The cat sat on the\n2,She drank a cup of\n")
    write(folder / "data" / "spellings.csv", "variant,response\nmatt,mat\n")
    return write(folder / "beside-cloze.yaml", CLOZE_TASK.format(items=items))


def load_through_the_task_file(task_file: Path, data_dir: Path) -> Any:
    config = load_task_file(task_file)
    loader = get_registry().loader(config.loader)
    with naming_task_file(config, loader):
        return loader(config.data, data_dir)


def test_a_generic_task_reads_files_join_and_replacements_beside_its_task_file(
    tmp_path: Path, package: Callable[..., str]
) -> None:
    name = package({"data/items.csv": "item,context\n1,The cat sat on the\n2,She drank a cup of\n"})
    for items in ("task:data/items.csv", f"package:{name}/data/items.csv"):
        task_file = study(tmp_path / "study", items)
        data = load_through_the_task_file(task_file, tmp_path / "empty")
        assert [i.human_counts for i in data.instances] == [{"mat": 4}, {"tea": 2}]
        assert data.instances[0].context == "The cat sat on the"
        # The data source record lists the files read; the hash is of their bytes, wherever they lie.
        assert data.source["files"] == [str(task_file.parent.absolute() / "data" / "guesses.csv")]
        assert data.source["join"]["files"][0].endswith("items.csv")
        assert data.source["normalise"]["replacements"]["file"].endswith("spellings.csv")
    moved = study(tmp_path / "moved", "task:data/items.csv")
    assert load_through_the_task_file(moved, tmp_path).data_hash == data.data_hash


def test_a_task_path_in_a_loader_called_directly_names_the_option(tmp_path: Path) -> None:
    task_file = study(tmp_path, "task:data/items.csv")
    config = load_task_file(task_file)
    with pytest.raises(HarnessError, match=r"data option 'files': task:data/guesses\.csv: a task: path is relative"):
        get_registry().loader(config.loader)(config.data, tmp_path)


def test_validate_reads_task_paths_beside_the_task_file_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    task_file = study(tmp_path / "study", "task:data/items.csv")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    checked = cli(
        "validate", str(Path("..") / "study" / "beside-cloze.yaml"), "--data-dir", str(tmp_path / "elsewhere")
    )
    assert "make 2 instances" in checked.stdout
    write(task_file.parent / "data" / "spellings.csv", "variant\nmatt\n")
    refused = cli("validate", str(task_file), "--data-dir", ".", check=False)
    assert refused.returncode == 2
    assert (
        refused.stderr.startswith(f"error: {task_file}: ")
        and "spellings.csv: line 2: expected 2 columns" in refused.stderr
    )
    assert json.dumps(refused.stderr).count("\\n") == 1  # one line


def test_a_run_of_a_task_file_given_by_path_is_rescored_with_its_task_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    """``harness score`` reads the run's configuration from results.json, which is not the task file: the run
    records where the task file was (``data_sources.<task>.task_file``), so task: paths resolve as they did."""
    task_file = study(tmp_path / "study", "task:data/items.csv")
    runs = tmp_path / "runs"
    cli(
        "run", "--tasks", str(task_file), "--model", "mock:test", "--data-dir", str(tmp_path), "--output-dir", str(runs)
    )
    results = json.loads((runs / "mock__test" / "results.json").read_text())
    assert results["data_sources"]["beside-cloze"]["task_file"] == str(task_file.absolute())
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    cli("score", str(runs / "mock__test"), "--data-dir", str(tmp_path))
    rescored = json.loads((runs / "mock__test" / "results.json").read_text())
    assert rescored["metrics"]["beside-cloze"]["tvd"]["value"] == pytest.approx(
        results["metrics"]["beside-cloze"]["tvd"]["value"]
    )


def test_a_plugin_loader_resolves_its_paths_through_the_public_api(tmp_path: Path) -> None:
    from harness import api

    write(tmp_path / "norms" / "b.csv")
    write(tmp_path / "norms" / "a.csv")
    assert api.resolve_data_paths(["norms/*.csv"], tmp_path, "my_option") == [
        tmp_path / "norms" / "a.csv",
        tmp_path / "norms" / "b.csv",
    ]
    with pytest.raises(HarnessError, match=r"data option 'my_option': task:x\.csv: a task: path is relative"):
        api.resolve_data_paths(["task:x.csv"], tmp_path, "my_option")
