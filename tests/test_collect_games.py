"""The games' items made from a model (``harness/collect/games.py``), on the mock adapter: the layouts the server,
the flow and the export read, checked by hand on a small text."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.collect.prepare import open_study
from harness.errors import HarnessError

TEXTS = "id,text\na,The cat sat on the mat today.\nb,Dogs like to run in the park.\n"


def _study(tmp_path: Path, body: str) -> Path:
    (tmp_path / "texts.csv").write_text(TEXTS, encoding="utf-8")
    path = tmp_path / "study.yaml"
    path.write_text("consent: I agree.\ninstructions: Play.\nmodel: mock:x\ntexts: {file: texts.csv}\n" + body)
    return path


def test_next_token_items_hold_the_tokens_the_positions_and_the_models_top1(tmp_path: Path) -> None:
    path = _study(tmp_path, "study: nt\nkind: next_token_game\npositions: {start: 2, every: 2, per_text: 3}\n")
    flow = open_study(path)
    items = flow.store.items("main")
    assert [(i.item_id, i.n_steps) for i in items] == [("a", 3), ("b", 3)]
    first = items[0].payload
    # The mock adapter's tokens are words with their leading space; they join back to the text.
    assert first["tokens"] == ["The", " cat", " sat", " on", " the", " mat", " today."]
    assert first["positions"] == [2, 4, 6]
    assert sorted(first["model_top1"]) == ["2", "4", "6"]
    token, prob = first["model_top1"]["2"]
    assert isinstance(token, str) and 0 < prob <= 1
    # A participant's guess keeps its leading space and is scored against the true token.
    person = flow.join("p1")
    flow.consent(person)
    state = flow.state(person)
    assert state["view"] == {"tokens": ["The", " cat"], "position": 2}
    result = flow.answer(person, state["seq"], state["step"], " sat", 1200)
    assert result["feedback"] == {"target": " sat", "correct": True}
    assert result["state"]["score"] == {"correct": 1, "total": 1}
    result = flow.answer(person, 0, 1, "the", 900)  # no leading space: a different token
    assert result["feedback"] == {"target": " the", "correct": False}
    assert result["state"]["score"] == {"correct": 1, "total": 2}


def test_which_one_rounds_carry_the_generators_probabilities_sample_by_sample(tmp_path: Path) -> None:
    path = _study(
        tmp_path,
        "study: wo\nkind: which_one_game\npositions: {start: 2, every: 3}\nsamples_per_position: 2\nseed: 7\n",
    )
    flow = open_study(path)
    items = flow.store.items("main")
    # Positions 2 and 5 of both texts; every position's first sample before any second one.
    assert [i.item_id for i in items] == [
        "a-2-s0",
        "a-5-s0",
        "b-2-s0",
        "b-5-s0",
        "a-2-s1",
        "a-5-s1",
        "b-2-s1",
        "b-5-s1",
    ]
    round0 = items[0].payload
    assert round0["context"] == "The cat" and round0["true_token"] == " sat" and round0["index"] == 2
    assert 0 < round0["generator_prob"] <= 1 and 0 < round0["generator_true_prob"] <= 1
    # The same study prepared again draws the same tokens (seeded by the study's seed and the position).
    again = open_study(path, tmp_path / "again.sqlite").store.items("main")
    assert [i.payload for i in again] == [i.payload for i in items]
    # The answer is the percentage for the token shown first; the stored judgment is for the true token.
    person = flow.join("p1")
    flow.consent(person)
    state = flow.state(person)
    pair = state["view"]["pair"]
    assert sorted(pair) == sorted([round0["true_token"], round0["sampled_token"]])
    flow.answer(person, state["seq"], 0, 80, 3000)
    stored = flow.store.responses()[0]
    expected = 0.8 if pair[0] == round0["true_token"] else 0.2
    assert math.isclose(stored["judgment"], expected)
    assert stored["shown_order"] == ("true_first" if pair[0] == round0["true_token"] else "sampled_first")


def test_a_game_needs_a_model_that_acts_at_the_token_level(tmp_path: Path) -> None:
    path = _study(tmp_path, "study: wo\nkind: which_one_game\n")
    path.write_text(path.read_text().replace("model: mock:x", "model: replay:nothing"))
    with pytest.raises(HarnessError, match="replay:nothing"):
        open_study(path)
