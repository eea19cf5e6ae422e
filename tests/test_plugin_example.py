"""The complete plugin of ``docs/plugins.md`` ("A complete plugin"), copied from the page and run.

The three marked blocks (```` ```python ttr_plugin/scorer.py ````, the task YAML, the adapter) are written into a
package, registered as an installed plugin would be, and the task runs end to end with the ``echo`` adapter over
10 inputs; the numbers are checked against a type-token ratio worked out by hand."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

from harness.registry import manager as registry_module
from harness.registry.manager import _collect, get_plugin_manager
from tests.conftest import run_main
from tests.helpers import REPO

BLOCK = re.compile(r"^```\w+ (ttr_plugin/\S+)\n(.*?)^```$", re.M | re.S)


def _blocks() -> dict[str, str]:
    return dict(BLOCK.findall((REPO / "docs" / "plugins.md").read_text()))


def test_the_example_is_short_and_imports_only_harness_api() -> None:
    blocks = _blocks()
    assert set(blocks) == {"ttr_plugin/scorer.py", "ttr_plugin/ttr-demo.yaml", "ttr_plugin/adapter.py"}
    assert sum(len(text.splitlines()) for text in blocks.values()) < 150
    for path in ("ttr_plugin/scorer.py", "ttr_plugin/adapter.py"):
        for node in ast.walk(ast.parse(blocks[path])):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
                assert node.module == "harness.api", f"{path} imports {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("harness") for a in node.names), path


@pytest.fixture
def example_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The package written from the page, on ``sys.path`` and registered (for this test only)."""
    package = tmp_path / "site" / "ttr_plugin"
    package.mkdir(parents=True)
    for path, text in _blocks().items():
        (tmp_path / "site" / path).write_text(text)
    (package / "__init__.py").write_text(
        "from ttr_plugin.adapter import register_models\n"
        "from ttr_plugin.scorer import register_scorers, register_tasks\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in [m for m in sys.modules if m == "ttr_plugin" or m.startswith("ttr_plugin.")]:
        monkeypatch.delitem(sys.modules, name)
    import ttr_plugin

    pm = get_plugin_manager(load_entry_points=False)
    pm.register(ttr_plugin, name="ttr_plugin")
    monkeypatch.setattr(registry_module, "_REGISTRY", _collect(pm))
    data = tmp_path / "data"
    (data / "ttr-demo").mkdir(parents=True)
    with (data / "ttr-demo" / "inputs.jsonl").open("w") as out:
        for i in range(10):
            # Input i: "a a b" plus i distinct words; its references "a b c d" and "e e e e" (TTR 5/8).
            source = " ".join(["a", "a", "b", *(f"w{k}" for k in range(i))])
            out.write(json.dumps({"id": f"s{i}", "source": source, "references": ["a b c d", "e e e e"]}) + "\n")
    return data


def test_the_example_plugin_runs_end_to_end(example_plugin: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    listed = run_main("ls", "models").stdout
    assert "echo\tttr_plugin" in listed
    run = run_main(
        "run", "--tasks", "ttr-demo", "--model", "echo:x", "--data-dir", str(example_plugin), "--output-dir", str(out)
    )
    assert "ttr_gap" in run.stdout
    run_dir = out / "echo__x"
    results = json.loads((run_dir / "results.json").read_text())
    (task,) = results["metrics"]
    assert task == "ttr-demo@ancestral"
    samples = [json.loads(line) for line in next(run_dir.glob("samples_ttr-demo@ancestral_*.jsonl")).open()]
    assert [s["id"] for s in samples] == [f"s{i}" for i in range(10)]
    for i, sample in enumerate(samples):
        source = " ".join(["a", "a", "b", *(f"w{k}" for k in range(i))])
        # The echo adapter answers with its input, twice (n_samples: 2).
        assert sample["response"]["texts"] == [source, source]
        # Model: the source twice, 2 + i types in 2 * (3 + i) words; humans: 5 types in 8 words.
        values = sample["metrics"]
        assert values["ttr_model"] == pytest.approx((2 + i) / (2 * (3 + i)))
        assert values["ttr_human"] == pytest.approx(5 / 8)
        assert values["ttr_gap"] == pytest.approx(abs((2 + i) / (6 + 2 * i) - 5 / 8))
        # The two halves are the two references: TTR 4/4 and 1/4.
        assert values["ttr_gap_halves"] == pytest.approx(0.75)
    metrics = results["metrics"][task]
    expected = sum(abs((2 + i) / (6 + 2 * i) - 5 / 8) for i in range(10)) / 10
    assert metrics["ttr_gap"]["value"] == pytest.approx(expected)
    assert metrics["ttr_gap"]["ci"][0] <= expected <= metrics["ttr_gap"]["ci"][1]
    assert metrics["ttr_gap_halves"]["value"] == pytest.approx(0.75)
    assert results["higher_is_better"][task]["ttr_gap"] is False
    assert results["controls"][task] == {"ttr_gap": "ttr_gap_halves"}
    assert results["headline"][task] == ["ttr_gap"]


def test_the_echo_adapter_answers_cloze_requests(example_plugin: Path) -> None:
    from ttr_plugin.adapter import EchoAdapter

    from harness.api import ModelSpec, SampleWordsRequest

    adapter = EchoAdapter(ModelSpec("echo", "x", {"block_size": "3"}))
    assert adapter.group_size == 3
    answers = adapter.sample_words_many(
        [SampleWordsRequest("It was a dark and Stormy,", 5, 0), SampleWordsRequest("", 4, 0)]
    )
    assert answers[0].counts == {"stormy": 5} and answers[0].rejected == {}
    assert answers[1].counts == {} and answers[1].rejected == {"empty": 4}
