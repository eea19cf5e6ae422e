"""``harness score --tasks NAME`` finds a generation task stored under its decoding variant.

A ``generate`` task run with its default decoding is stored as ``NAME@ancestral``; the name the user ran it by
finds it when the run has that one variant of it. A decoding sweep has several, and the full name is needed (one
line listing them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_main

TASK = """task: tiny-gen
version: 1
loader: generic_generation
data:
  files: {files}
  id: id
  source: source
  human: {{shape: list, responses: references}}
request: generate
params:
  n_samples: 3
  max_new_tokens: 10
scorers: [lexical]
"""


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    items = tmp_path / "items.jsonl"
    with items.open("w") as out:
        for i in range(6):
            refs = [f"a cat {i} sat", f"the cat {i} sits", f"one cat {i} rests", f"cat {i} sat down"]
            out.write(json.dumps({"id": f"i{i}", "source": f"the cat number {i} sat", "references": refs}) + "\n")
    path = tmp_path / "tiny-gen.yaml"
    path.write_text(TASK.format(files=items))
    return path


def _run(task_file: Path, out: Path, *extra: str) -> Path:
    run_main("run", "--tasks", str(task_file), "--model", "mock:x", "--limit", "5", "--output-dir", str(out), *extra)
    return out / "mock__x"


def test_the_name_finds_the_one_decoding_variant(task_file: Path, tmp_path: Path) -> None:
    run_dir = _run(task_file, tmp_path / "runs")
    original = json.loads((run_dir / "results.json").read_text())
    assert list(original["metrics"]) == ["tiny-gen@ancestral"]
    rescored = run_main("score", str(run_dir), "--tasks", "tiny-gen", "--output-dir", str(tmp_path / "again"))
    assert "tiny-gen@ancestral" in rescored.stdout
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["metrics"] == original["metrics"]
    # The full name is accepted as before; an unknown name is refused with the run's tasks.
    run_main("score", str(run_dir), "--tasks", "tiny-gen@ancestral", "--output-dir", str(tmp_path / "full"))
    missing = run_main("score", str(run_dir), "--tasks", "tiny", "--output-dir", str(tmp_path / "x"), check=False)
    assert missing.returncode != 0
    assert missing.stderr.strip() == f"error: --tasks: 'tiny' is not in {run_dir} (tiny-gen@ancestral)"


def test_a_sweep_needs_the_full_name(task_file: Path, tmp_path: Path) -> None:
    run_dir = _run(task_file, tmp_path / "runs", "--task-args", "decoding=ancestral;top_p=0.9")
    refused = run_main("score", str(run_dir), "--tasks", "tiny-gen", "--output-dir", str(tmp_path / "x"), check=False)
    assert refused.returncode != 0
    assert refused.stderr.strip() == (
        f"error: --tasks: {run_dir} has 2 variants of 'tiny-gen' (tiny-gen@ancestral, tiny-gen@top_p=0.9): "
        "name one in full"
    )
    assert not (tmp_path / "x").exists()
    chosen = run_main("score", str(run_dir), "--tasks", "tiny-gen@top_p=0.9", "--output-dir", str(tmp_path / "one"))
    assert "tiny-gen@top_p=0.9" in chosen.stdout
    assert list(json.loads((tmp_path / "one" / "results.json").read_text())["metrics"]) == ["tiny-gen@top_p=0.9"]
