"""WMT'14 reference selection (``references: all | additional | first_K``) and undefined distances
(``undefined: drop | zero``), the two conventions in which the original study (Giulianelli et al., 2023) differs
from the harness's defaults.

The counts are checked on the real data where it is present (skipped otherwise) and on the hand-made fixture
always; the undefined-distance cases are small enough to compute by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.data.loaders import hash_files
from harness.errors import HarnessError
from harness.instances import GenerationInstance
from harness.plugins.loaders.wmt14 import load_wmt14_multiref, selected_tags
from harness.registry.task_validation import load_task_file
from harness.requests import GenerateResponse
from harness.scorers.variability import LexicalScorer, control_halves, paper_halves, w1
from tests.helpers import REPO, shared_data_dir

FIXTURE = REPO / "tests" / "fixtures" / "wmt14"
PAIRS = ("en-de", "en-fr")
#: Sources of the real data whose original WMT reference is none of R1 … R10 (counted from the JSONL copy).
DISTINCT_ORIGINAL = {"en-de": 252, "en-fr": 109}


def require_wmt14(pair: str) -> Path:
    """The real data root, or a skip when the pair's official file and JSONL copy are not both there."""
    data = shared_data_dir()
    folder = data / "wmt14-multiref"
    if (
        not (folder / "original" / f"wmt14-{pair}.extra_refs.gz").is_file()
        or not (folder / f"wmt14_{pair}_multiref.jsonl").is_file()
    ):
        pytest.skip(f"WMT'14 multi-reference data ({pair}) not found under {data}")
    return data


def _references(data: Any) -> list[tuple[str, ...]]:
    return [inst.references for inst in data.instances if isinstance(inst, GenerationInstance)]


def _one_line_error(call: Callable[[], Any]) -> str:
    with pytest.raises(HarnessError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    return message


# ------------------------------------------------------------------------------------------------- real data


@pytest.mark.parametrize("pair", PAIRS)
def test_each_selection_keeps_its_number_of_references_on_the_real_data(pair: str) -> None:
    data_dir = require_wmt14(pair)
    loaded = {
        sel: load_wmt14_multiref({"pair": pair, "references": sel}, data_dir)
        for sel in ("all", "additional", "first_3")
    }
    counts = {sel: {len(refs) for refs in _references(data)} for sel, data in loaded.items()}
    assert counts == {"all": {11}, "additional": {10}, "first_3": {3}}
    assert all(len(data.instances) == 500 for data in loaded.values())
    everything = _references(loaded["all"])
    assert _references(loaded["first_3"]) == [refs[:3] for refs in everything]  # T, R1, R2
    assert _references(loaded["additional"]) == [refs[1:] for refs in everything]  # R1 … R10
    assert [inst.id for inst in loaded["additional"].instances] == [inst.id for inst in loaded["all"].instances]


@pytest.mark.parametrize("pair", PAIRS)
def test_additional_excludes_the_original_reference_on_the_real_data(pair: str) -> None:
    data_dir = require_wmt14(pair)
    path = data_dir / "wmt14-multiref" / f"wmt14_{pair}_multiref.jsonl"
    records = {str(r["id"]): r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    everything = load_wmt14_multiref({"pair": pair}, data_dir)
    assert [r[0] for r in _references(everything)] == [
        records[i.id]["original_reference"].strip() for i in everything.instances
    ]  # the default's first reference is T
    for fmt in ("official", "jsonl"):
        data = load_wmt14_multiref({"pair": pair, "format": fmt, "references": "additional"}, data_dir)
        distinct = 0
        for inst in data.instances:
            assert isinstance(inst, GenerationInstance)
            record = records[inst.id]
            # Exactly the release's R1 … R10, in order: the T line is not among them.
            assert list(inst.references) == [r.strip() for r in record["additional_references"]]
            original = record["original_reference"].strip()
            if original not in inst.references:
                distinct += 1
        # Some translators handed in the WMT reference unchanged (an R equal to T: 331 of en-de's 5,000 R lines,
        # 932 of en-fr's), so T's text is absent from R1 … R10 only for these many sources:
        assert distinct == DISTINCT_ORIGINAL[pair]


def test_the_default_is_all_eleven_with_the_hash_of_the_file_read() -> None:
    data_dir = require_wmt14("en-de")
    default = load_wmt14_multiref({"pair": "en-de"}, data_dir)
    path = data_dir / "wmt14-multiref" / "original" / "wmt14-en-de.extra_refs.gz"
    assert default.data_hash == hash_files([path])  # unchanged by the option
    assert "references" not in default.source and default.source["n_references"] == 11
    assert _references(load_wmt14_multiref({"pair": "en-de", "references": "all"}, data_dir)) == _references(default)


# --------------------------------------------------------------------------------- fixture: identity and errors


def test_selections_on_the_fixture() -> None:
    every = _references(load_wmt14_multiref({"pair": "en-de"}, FIXTURE))
    for sel, expected in (("additional", 10), ("all", 11), ("first_3", 3), ("first_1", 1), ("first_11", 11)):
        refs = _references(load_wmt14_multiref({"pair": "en-de", "references": sel}, FIXTURE))
        assert {len(r) for r in refs} == {expected}, sel
    # 'first' counts the original WMT reference first.
    first = _references(load_wmt14_multiref({"pair": "en-de", "references": "first_1"}, FIXTURE))
    assert first == [r[:1] for r in every]
    # max_references caps the selection: the first 4 additional references.
    capped = load_wmt14_multiref({"pair": "en-de", "references": "additional", "max_references": 4}, FIXTURE)
    assert _references(capped) == [r[1:5] for r in every]
    assert capped.source["reference_tags"] == ["R1", "R2", "R3", "R4"]
    assert selected_tags("first_3") == ("T", "R1", "R2")


def test_the_selection_is_part_of_the_data_hash_and_source() -> None:
    def load(**options: Any) -> Any:
        return load_wmt14_multiref({"pair": "en-de", **options}, FIXTURE)

    default = load()
    file_hash = hash_files([FIXTURE / "wmt14-multiref" / "original" / "wmt14-en-de.extra_refs.gz"])
    assert default.data_hash == file_hash
    assert load(references="all").data_hash == load(references="first_11").data_hash == file_hash
    hashes = {sel: load(references=sel).data_hash for sel in ("additional", "first_3", "first_10", "first_1")}
    assert len(set(hashes.values())) == 4 and file_hash not in hashes.values()
    # The hash names the references kept, however they were asked for.
    assert load(max_references=3).data_hash == hashes["first_3"]
    assert load(references="additional").source["references"] == "additional"
    assert load(references="first_3").source["reference_tags"] == ["T", "R1", "R2"]
    # Another format of the same selection reads other bytes, so it has another hash too.
    jsonl = load(references="additional", format="jsonl")
    assert _references(jsonl) == _references(load(references="additional"))
    assert jsonl.data_hash != hashes["additional"]


@pytest.mark.parametrize(
    "bad", ["first_0", "first_12", "first_03", "First_3", "first_3\n", "additionals", "", 3, None, True]
)
def test_a_bad_selection_is_one_line_naming_the_option(bad: object) -> None:
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de", "references": bad}, FIXTURE))
    assert "option 'references'" in message and "first_K" in message, message


def test_a_misspelt_option_and_a_cap_beyond_the_selection_are_refused() -> None:
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de", "reference": "all"}, FIXTURE))
    assert "unknown option 'reference'" in message and "references" in message
    message = _one_line_error(
        lambda: load_wmt14_multiref({"pair": "en-de", "references": "additional", "max_references": 11}, FIXTURE)
    )
    assert "'max_references'" in message and "10 references" in message


def test_a_bad_selection_in_a_task_file_fails_validation(tmp_path: Path) -> None:
    text = (REPO / "harness" / "tasks" / "wmt14-en-de.yaml").read_text(encoding="utf-8")
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace("  format: auto\n", "  format: auto\n  references: first_twelve\n"), "utf-8")
    message = _one_line_error(lambda: load_task_file(path))
    assert "'references'" in message and "first_twelve" in message


def test_the_paper_task_uses_the_additional_references_and_zero_for_undefined() -> None:
    config = load_task_file(REPO / "harness" / "tasks" / "wmt14-en-de-paper.yaml")
    assert config.data["references"] == "additional"
    args = {s.name: s.args for s in config.scorers}
    assert args["lexical"] == {"undefined": "zero"} and args["syntactic"] == {"undefined": "zero"}
    default = load_task_file(REPO / "harness" / "tasks" / "wmt14-en-de.yaml")
    assert "references" not in default.data  # the default task keeps all 11
    assert config.params == default.params


# ------------------------------------------------------------------------------------- undefined distances


def _instance(refs: list[str]) -> GenerationInstance:
    return GenerationInstance(id="0", source="s", references=tuple(refs), language="en")


def _response(texts: list[str]) -> GenerateResponse:
    return GenerateResponse(texts=texts, finish_reasons=["eos"] * len(texts), n_tokens=[1] * len(texts))


def _bigram_scorer(**args: Any) -> LexicalScorer:
    # The blank English tokenizer is enough (and the same tokens as a pipeline's for these texts).
    return LexicalScorer(n=2, pipelines={"en": ["no_such_spacy_package"]}, **args)


def test_undefined_bigram_distances_are_dropped_by_default_and_zero_in_the_paper_setting() -> None:
    # Bigrams: "yes" and "no" and "ok" have none; "yes please" has (yes, please).
    # H: (yes, no) undefined, (yes, yes please) 1, (no, yes please) 1.
    # M: (ok, yes please) 1.
    # C: ok x (yes, no, yes please) = undefined, undefined, 1; yes please x (...) = 1, 1, 0.
    inst = _instance(["yes", "no", "yes please"])
    response = _response(["ok", "yes please"])
    dropped = _bigram_scorer().score(inst, response, np.random.default_rng(0))
    # Left out: H = {1, 1}, M = {1}, C = {1, 1, 1, 0}.
    assert dropped["bigram_distances"] == {"H": [1.0, 1.0], "M": [1.0], "C": [1.0, 1.0, 1.0, 0.0]}
    assert dropped["bigram_h_mean"] == pytest.approx(1.0)
    assert dropped["bigram_c_mean"] == pytest.approx(0.75)
    assert dropped["bigram_w1_mh"] == pytest.approx(0.0)  # W1({1}, {1, 1})
    assert dropped["bigram_w1_ch"] == pytest.approx(0.25)  # a quarter of C's mass moves from 0 to 1
    assert dropped["bigram_dmu_mh"] == pytest.approx(0.0)
    assert dropped["bigram_dmu_ch"] == pytest.approx(-0.25)

    zero = _bigram_scorer(undefined="zero").score(inst, response, np.random.default_rng(0))
    # Counted as 0: H = {0, 1, 1}, M = {1}, C = {0, 0, 1, 1, 1, 0}.
    assert zero["bigram_distances"] == {"H": [0.0, 1.0, 1.0], "M": [1.0], "C": [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]}
    assert zero["bigram_h_mean"] == pytest.approx(2 / 3)
    assert zero["bigram_m_mean"] == pytest.approx(1.0)
    assert zero["bigram_c_mean"] == pytest.approx(0.5)
    assert zero["bigram_w1_mh"] == pytest.approx(1 / 3)  # W1({1}, {0, 1, 1}): H's third at 0 moves to 1
    assert zero["bigram_w1_ch"] == pytest.approx(1 / 6)  # CDFs at 0: C 1/2, H 1/3
    assert zero["bigram_dmu_mh"] == pytest.approx(1 / 3)
    assert zero["bigram_dmu_ch"] == pytest.approx(-1 / 6)
    h1, _ = paper_halves(np.array([0.0, 1.0, 1.0]))
    assert zero["bigram_paper_w1_mh"] == pytest.approx(w1(np.array([1.0]), h1))


def test_undefined_pairs_are_counted_in_the_notes_either_way() -> None:
    inst = _instance(["yes", "no", "yes please"])
    response = _response(["ok", "yes please"])
    for setting, fate in (({}, "were left out"), ({"undefined": "zero"}, "were counted as distance 0")):
        scorer = _bigram_scorer(n_resamples=10, **setting)
        row = scorer.score(inst, response, np.random.default_rng(0))
        scorer.aggregate([row], np.random.default_rng(0))
        note = scorer.notes["bigram_undefined_pairs"]
        assert note.startswith("3 pairs") and fate in note, note  # one human pair, two cross pairs
    assert "undefined" not in _bigram_scorer().describe()
    assert _bigram_scorer(undefined="zero").describe()["undefined"] == "zero"


def test_the_human_controls_see_the_zeros_too() -> None:
    # Four references: (yes, no) undefined, every other pair at distance 1. With halves of two, a split that pairs
    # "yes" with "no" has H_A = {undefined}: dropped, that split gives no value; as 0 it gives |0 - 1| = 1.
    inst = _instance(["yes", "no", "yes please", "no thanks"])
    splits = control_halves(4, np.random.default_rng(0), 10)
    pairs_yes_no = [{0, 1} in (set(a.tolist()), set(b.tolist())) for a, b in splits]
    assert 0 < sum(pairs_yes_no) < 10  # the seed gives both kinds of split
    dropped = _bigram_scorer(min_half=2).score(inst, None, np.random.default_rng(0))
    assert dropped["bigram_control_w1_splits"] == [0.0] * (10 - sum(pairs_yes_no))
    zero = _bigram_scorer(min_half=2, undefined="zero").score(inst, None, np.random.default_rng(0))
    assert zero["bigram_control_w1_splits"] == [1.0 if p else 0.0 for p in pairs_yes_no]
    assert zero["bigram_control_w1"] == pytest.approx(sum(pairs_yes_no) / 10)
    h1, h2 = paper_halves(np.array([0.0, 1.0, 1.0, 1.0, 1.0, 1.0]))
    assert zero["bigram_paper_control_w1"] == pytest.approx(w1(h1, h2))


def test_a_bad_undefined_setting_names_the_argument() -> None:
    message = _one_line_error(lambda: LexicalScorer(undefined="nan"))
    assert "scorer 'lexical': argument 'undefined'" in message and "'drop', 'zero'" in message
