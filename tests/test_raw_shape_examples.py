"""``examples/raw-shapes/``: the hand-made files in each raw shape researchers hold (an MTurk batch file, a
Qualtrics export, passages in text files with CRLF, BOM, NBSP and NEL quirks, packed cells, JSON keyed by id), each
a task by YAML alone: every one validates on its own data, and what it reads is checked by hand."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.plugins.loaders.generic.choice import load_generic_choice
from harness.plugins.loaders.generic.cloze import load_generic_cloze
from tests.helpers import REPO, shared_data_dir

RAW_SHAPES = REPO / "examples" / "raw-shapes"


@pytest.mark.parametrize("task", sorted(p.name for p in RAW_SHAPES.glob("*.yaml")))
def test_every_raw_shape_example_validates_on_its_own_data(cli: Any, task: str) -> None:
    checked = cli("validate", str(RAW_SHAPES / task), "--data-dir", str(RAW_SHAPES / "data"))
    assert checked.stdout.startswith(f"ok: {RAW_SHAPES / task}")
    if task == "mturk-cloze.yaml":
        # 8 approved assignments of 3 sentences, one left empty: 23 answers of 6 workers (A1X and A4W did both HITs).
        assert "make 6 instances from 23 answers of 6 participants (1 empty cell)" in checked.stdout


def test_the_mturk_example_counts_approved_assignments_once_per_sentence(tmp_path: Path) -> None:
    options = yaml.safe_load((RAW_SHAPES / "mturk-cloze.yaml").read_text())["data"]
    loaded = load_generic_cloze(options, RAW_SHAPES / "data")
    # Counted by hand from examples/raw-shapes/data/mturk/batch_results.csv (A3Z's assignment is rejected; A5V left
    # sentence s03 empty; A1X and A4W did both HITs, once per sentence each).
    assert {i.id: i.human_counts for i in loaded.instances} == {
        "s01": {"mat": 3, "floor": 1},
        "s02": {"tea": 3, "coffee": 1},
        "s03": {"night": 2, "evening": 1},
        "s04": {"store": 2, "park": 1, "shop": 1},
        "s05": {"door": 3, "window": 1},
        "s06": {"salt": 2, "butter": 1, "pepper": 1},
    }
    assert loaded.instances[3].meta["participants"] == ["A1X", "A6U", "A7T", "A4W"]
    assert loaded.source["participants"]["n_participants"] == 6  # A1X A2Y A4W A5V A6U A7T


def test_the_passage_and_packed_examples_read_their_quirky_files_as_a_clean_copy_would() -> None:
    passages = yaml.safe_load((RAW_SHAPES / "passages-cloze.yaml").read_text())["data"]
    text = (RAW_SHAPES / "data" / "passages" / "texts" / "text_1.txt").read_bytes()
    assert text.startswith(b"\xef\xbb\xbf") and b"\r\n" in text and b"\xc2\xa0" in text and b"\xc2\x85" in text
    loaded = load_generic_cloze(passages, RAW_SHAPES / "data")
    # By hand: the BOM is dropped, NBSP, CRLF and NEL separate words, and the lone dash is not a word (alphanumeric).
    assert [(i.id, i.context, i.target_raw) for i in loaded.instances] == [
        ("1-3", "The old", "man"),
        ("1-7", "The old man walked to the", "harbour."),
        ("1-10", "The old man walked to the harbour. He paused —", "then"),
        ("2-2", "Rain", "fell"),
    ]
    packed = yaml.safe_load((RAW_SHAPES / "packed-cloze.yaml").read_text())["data"]
    cells = load_generic_cloze(packed, RAW_SHAPES / "data")
    # "mat, "well, then", Mat. , , floor " is 5 people, one without an answer; "tea,coffee, tea," is 4, one without.
    assert [(i.human_counts, i.meta["n_human_missing"]) for i in cells.instances] == [
        ({"mat": 2, "floor": 1, "well then": 1}, 1),
        ({"tea": 2, "coffee": 1}, 1),
    ]


def test_the_jspsych_example_counts_each_subject_once_per_sentence() -> None:
    options = yaml.safe_load((RAW_SHAPES / "jspsych-cloze.yaml").read_text())["data"]
    loaded = load_generic_cloze(options, RAW_SHAPES / "data")
    # By hand from examples/raw-shapes/data/jspsych/experiment_data.csv: the welcome screens are filtered out.
    assert [(i.id, i.human_counts, i.meta["participants"]) for i in loaded.instances] == [
        ("The cat sat on the", {"mat": 2, "floor": 1}, ["p01", "p02", "p03"]),
        ("She drank a cup of", {"tea": 2, "coffee": 1}, ["p01", "p02", "p03"]),
        ("It was a dark and stormy", {"night": 2, "evening": 1}, ["p01", "p02", "p03"]),
    ]


def test_the_pcibex_example_reads_each_participants_typed_answer() -> None:
    options = yaml.safe_load((RAW_SHAPES / "pcibex-cloze.yaml").read_text())["data"]
    loaded = load_generic_cloze(options, RAW_SHAPES / "data")
    # By hand from examples/raw-shapes/data/pcibex/results.csv: the TextInput 'answer' Final value of each trial.
    assert [(i.id, i.context, i.human_counts, i.meta["participants"]) for i in loaded.instances] == [
        ("1", "The children went outside to", {"play": 2, "eat": 1}, ["P-101", "P-102", "P-103"]),
        ("2", "After dinner she washed the", {"dishes": 2, "plates": 1}, ["P-101", "P-102", "P-103"]),
        ("3", "He opened the door and", {"left": 2, "walked": 1}, ["P-101", "P-102", "P-103"]),
    ]


def test_the_real_no_story_export_gives_each_items_choices_counted_from_its_column() -> None:
    """examples/your-data/pragmatics-no-story-irony.yaml over Hu et al.'s raw one-row-per-participant file: every
    item's counts equal a tally of its column made here with the csv module, and every target is the option the
    study's own code table calls correct (a second file the task does not read)."""
    data = shared_data_dir()
    raw = data / "pragmatics-mcq" / "hu2023" / "human_data" / "no_story" / "human_data_30ppts.csv"
    if not raw.is_file():
        pytest.skip(f"{raw} is not present")
    options = yaml.safe_load((REPO / "examples" / "your-data" / "pragmatics-no-story-irony.yaml").read_text())["data"]
    loaded = load_generic_choice(options, data)
    with open(raw, encoding="utf-8-sig", newline="") as f:
        people = list(csv.DictReader(f))
    codes_file = raw.parent / "codes" / "deceitsindirectironymaxims_simple.csv"
    with open(codes_file, encoding="utf-8-sig", newline="") as f:
        codes = {row["Question"]: row for row in csv.DictReader(f)}
    keys = [f"${{lm://Field/{k}}}" for k in range(2, 6)]
    assert len(loaded.instances) == 25
    for instance in loaded.instances:
        number = instance.id.removeprefix("Irony-")
        tally = Counter(person[f"{number}_Irony"] for person in people)
        assert instance.human_counts == tuple(tally[k] for k in keys)
        assert sum(instance.human_counts) == 30 and len(instance.meta["participants"]) == 30
        assert instance.target == [codes[f"X{number}_Irony"][k] for k in keys].index("Correct")
        assert len(instance.options) == 4 and instance.scenario
