"""Outputs made elsewhere: the released Provo generations and the generic JSON Lines format, replayed as a model.

The counts below were read off the released files (``provo/reference_outputs/TVD``, see its SOURCE.md): GPT-2 with
1,000 samples covers 798 positions (one of them, 3-59, a duplicate of 3-58 that the data set leaves out), GPT-2 at
temperature 0.5 all 2,687 with 40 each; BLOOM's 670 records hold 657 positions (13 drawn twice, 4 of them with
identical generations), ChatGPT's 501 hold 487.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.plugins.replay.formats import read_outputs
from harness.plugins.replay.generic import read_generic
from harness.words.replies import final_word, parse_word_list, recorded_word
from harness.words.rules import PAPER_FAILURE
from tests.helpers import require_provo, samples_of

TVD = Path("provo") / "reference_outputs" / "TVD"


def released(data: Path, sub: str, setting: str | None = None) -> Any:
    return read_outputs((data / TVD / sub).resolve(), "auto", setting)


def test_readers_count_the_released_positions_and_samples() -> None:
    data = require_provo()
    gpt2 = released(data, "GPT2/Generations")
    assert gpt2.format == "provo-gpt2" and len(gpt2.sources) == 8
    assert len(gpt2.entries) == 798 and {e.n_outputs for e in gpt2.entries.values()} == {1000}
    temp = released(data, "GPT2_Temp/Generations")
    assert len(temp.entries) == 2687 and {e.n_outputs for e in temp.entries.values()} == {40}
    bloom = released(data, "BLOOM/Generations")
    assert bloom.format == "provo-bloom" and len(bloom.entries) == 657
    assert len(bloom.duplicates) == 13 and sum(bloom.duplicates.values()) == 4
    assert {e.n_outputs for e in bloom.entries.values()} == {40} and not bloom.entries["33-36"].ended
    for setting in ("unbiased_temp_1", "unbiased_temp_2"):
        chat = released(data, "ChatGPT/Generations", setting)
        assert len(chat.entries) == 487 and {e.n_outputs for e in chat.entries.values()} == {40}
    diverse = released(data, "ChatGPT/Generations", "diverse")
    assert {e.n_outputs for e in diverse.entries.values()} == {1} and diverse.entries["2-3"].listed
    # The same BLOOM file read twice is one object (read once per process) with one hash.
    assert released(data, "BLOOM/Generations").sha256 == bloom.sha256


def test_raw_continuations_go_through_both_word_rules() -> None:
    # BLOOM's raw continuations, as the study's processed file shows them cut: "saidcome", "s", "focused".
    assert final_word(' said:\n"Come with', ended=False, mode="paper") == ("word", "saidcome")
    assert final_word(' said:\n"Come with', ended=False, mode="exact") == ("word", "said")
    assert final_word("'s parents", ended=False, mode="paper") == ("word", "s")
    assert final_word("-focused site", ended=False, mode="paper") == ("word", "focused")
    assert final_word(" if you encounter a sk", ended=False, mode="exact") == ("word", "if")
    assert final_word(" sk", ended=False, mode="exact") == ("reject", "truncated")  # may be cut off
    assert final_word("later.", ended=True, mode="exact") == ("word", "later")  # a chat reply ended there
    assert final_word("", ended=False, mode="paper") == ("word", PAPER_FAILURE)
    assert recorded_word("Failed to generate word", "exact") == ("reject", "failed")
    assert recorded_word("Failed to generate word", "paper") == ("word", PAPER_FAILURE)
    assert parse_word_list("1. later \n2. have passed\n3. in-between", "paper") == ["later", "have", "inbetween"]
    assert parse_word_list("1. later \n2. have passed\n3. in-between", "exact") == ["later", "have", "in-between"]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_generic_format_reads_words_texts_and_option_probabilities(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "outputs.jsonl",
        [
            {"harness_outputs": 1, "model": "my-model"},
            {"id": "1-2", "words": {"are": 3, "is": 1}},
            {"id": "1-3", "texts": [" many people", " some"], "ended": False},
            {"id": 7, "option_probs": [0.25, 0.75]},
        ],
    )
    outputs = read_generic(path)
    assert outputs.meta == {"model": "my-model"}
    assert outputs.entries["1-2"].words == {"are": 3, "is": 1} and outputs.entries["1-2"].n_outputs == 4
    assert outputs.entries["1-3"].texts == (" many people", " some") and not outputs.entries["1-3"].ended
    assert outputs.entries["7"].option_probs == (0.25, 0.75)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"words": {"a": 1}}, "line 1: 'id' must be a string or an integer"),
        ({"id": "1-2"}, "line 1: expected exactly one of words, texts, option_probs, got none"),
        ({"id": "1-2", "words": {"a": 1}, "texts": ["a"]}, "expected exactly one of"),
        ({"id": "1-2", "words": {"a": 0}}, "count of 'a' must be a positive integer"),
        ({"id": "1-2", "texts": "a b"}, "'texts' must be a non-empty list of strings"),
        ({"id": "1-2", "texts": ["a"], "ended": "yes"}, "'ended' must be true or false"),
        ({"id": "1", "option_probs": [0.5, -0.1]}, "'option_probs' must hold non-negative numbers"),
        ({"id": "1-2", "word": {"a": 1}}, "unknown field 'word'"),
    ],
)
def test_generic_format_errors_name_the_line(tmp_path: Path, record: dict[str, Any], message: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [record])
    with pytest.raises(HarnessError, match=message) as err:
        read_generic(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_import_of_a_subset_reports_missing_instances_and_the_source(cli: Any, tmp_path: Path) -> None:
    data = require_provo()
    outputs = write_jsonl(
        tmp_path / "mine.jsonl",
        [
            {"id": "1-2", "words": {"are": 3, "is": 1}},
            {"id": "1-3", "texts": [" many people", " some more", " are"], "ended": False, "context": "There are"},
            {"id": "99-1", "words": {"x": 1}},
        ],
    )
    out = tmp_path / "runs"
    result = cli(
        "import", str(outputs), "--task", "provo", "--name", "mine", "--output-dir", str(out), "--data-dir", str(data)
    )
    assert "no outputs for 2685 of 2687 instances" in result.stderr
    assert "1 of replay:mine's outputs match no instance (e.g. '99-1')" in result.stderr
    run_dir = out / "replay__mine"
    results = json.loads((run_dir / "results.json").read_text())
    source = results["data_sources"]["provo"]
    assert source["missing"]["n"] == 2685 and "1-2" not in source["missing"]["ids"]
    assert source["unmatched_outputs"] == {"n": 1, "ids": ["99-1"]}
    info = results["config"]["model_info"]
    assert info["format"] == "jsonl" and len(info["source_sha256"]) == 64
    assert results["configs"]["provo"]["params"]["n_samples"] == 4  # the most common count (4, 3, 1: the largest)
    assert results["n-samples"]["provo"] == {"original": 2687, "effective": 2}
    samples = [json.loads(line) for line in samples_of(run_dir, "provo").read_text().splitlines()]
    assert [s["id"] for s in samples] == ["1-2", "1-3"]
    assert samples[0]["response"]["counts"] == {"are": 3, "is": 1}
    # " many people", " some more", " are": the last was cut off (ended false), so its word may be incomplete.
    assert samples[1]["response"]["counts"] == {"many": 1, "some": 1}
    assert samples[1]["response"]["rejected"] == {"truncated": 1}
    assert samples[1]["response"]["first_seen"] == ["many", "some"]
    # TVD of {are: .75, is: .25} against the first position's 40 human guesses (are 16, is 9, ...): checked by hand
    # 0.5 * (|.75 - .4| + |.25 - .225| + (1 - .4 - .225)) = 0.5 * (.35 + .025 + .375) = 0.375.
    assert samples[0]["metrics"]["tvd"] == pytest.approx(0.375)

    # Re-scoring reads the same two instances; the leaderboard takes the partial run beside the human one.
    cli("score", str(run_dir), "--scorers", "tvd,top1", "--data-dir", str(data))
    rescored = json.loads((run_dir / "rescored" / "results.json").read_text())
    assert rescored["metrics"]["provo"]["tvd"]["value"] == pytest.approx(results["metrics"]["provo"]["tvd"]["value"])
    assert rescored["n-samples"]["provo"]["effective"] == 2
    cli("run", "--tasks", "provo", "--human-only", "--output-dir", str(out), "--data-dir", str(data), "--limit", "2")
    cli("leaderboard", str(run_dir), str(out / "human"), "-o", str(tmp_path / "board"), "--no-plots")
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    assert any("mine" in json.dumps(system) for system in board["systems"])


def test_outputs_matching_no_instance_are_recorded_when_every_instance_is_covered(tmp_path: Path) -> None:
    from harness.registry.manager import get_registry
    from harness.registry.task_loading import resolve_tasks
    from harness.run.task_data import load_task_data

    data = require_provo()
    (task,) = resolve_tasks(["provo"], {}, get_registry(), expand_decoding=False)
    every = load_task_data(task, get_registry(), data, None)
    ids = [inst.id for inst in every.instances]
    loaded = load_task_data(task, get_registry(), data, None, lambda instances: [*ids, "99-1"])
    assert len(loaded.instances) == 2687 and "missing" not in loaded.source
    assert loaded.source["unmatched_outputs"] == {"n": 1, "ids": ["99-1"]}


def test_replayed_context_must_be_the_tasks(cli: Any, tmp_path: Path) -> None:
    data = require_provo()
    outputs = write_jsonl(
        tmp_path / "shifted.jsonl",
        [{"id": "1-2", "words": {"are": 1}, "context": "Once upon"}, {"id": "1-3", "words": {"many": 1}}],
    )
    out = tmp_path / "runs"
    result = cli(
        "import",
        str(outputs),
        "--task",
        "provo",
        "--name",
        "shifted",
        "--output-dir",
        str(out),
        "--data-dir",
        str(data),
    )
    assert "instance 1-2: the outputs answer the context 'Once upon', the task's is 'There'; left out" in result.stderr
    results = json.loads((out / "replay__shifted" / "results.json").read_text())
    assert results["n-samples"]["provo"]["effective"] == 1


def test_import_needs_a_readable_source(cli: Any, tmp_path: Path) -> None:
    require_provo()
    result = cli(
        "import",
        str(tmp_path / "nothing.jsonl"),
        "--task",
        "provo",
        "--name",
        "x",
        "--output-dir",
        str(tmp_path),
        check=False,
    )
    assert result.returncode == 2 and "nothing.jsonl does not exist" in result.stderr
    odd = tmp_path / "outputs.txt"
    odd.write_text("hello")
    result = cli("import", str(odd), "--task", "provo", "--name", "x", "--output-dir", str(tmp_path), check=False)
    assert result.returncode == 2 and "cannot tell the outputs format from the name" in result.stderr


def test_released_bloom_imports_with_both_word_rules(cli: Any, tmp_path: Path) -> None:
    data = require_provo()
    bloom = str(data / TVD / "BLOOM" / "Generations")
    out = tmp_path / "runs"
    for task, name in (("provo", "bloom"), ("provo-paper", "bloom-paper")):
        cli("import", bloom, "--task", task, "--name", name, "--output-dir", str(out), "--data-dir", str(data))
    exact = json.loads((out / "replay__bloom" / "results.json").read_text())
    paper = json.loads((out / "replay__bloom-paper" / "results.json").read_text())
    # 657 positions, one (36-30) left out: the study's passage 36 counts an "Ñ" token the data set does not.
    for results in (exact, paper):
        task = next(iter(results["n-samples"]))
        assert results["n-samples"][task] == {"original": 2687, "effective": 656}
        assert results["config"]["model_info"]["duplicates"]["n"] == 13
    # The exact rule rejects continuations whose first word may be cut off; the paper rule takes every one.
    assert exact["responses"]["provo"]["rejected"]["truncated"] > 0
    assert "rejected" not in paper["responses"]["provo-paper"]
