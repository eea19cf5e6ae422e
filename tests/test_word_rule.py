"""One word rule for people and models (docs/your-data.md, "Words"): phrases, scripts without spaces, emoji.

Hand-checked cases of the rule itself, then tasks over hand-made files that mirror what a new user brings: German
cloze norms where people typed phrases, Chinese norms, and a study answered with whole phrases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.words.replies import first_word_of_reply, parse_word_list
from harness.words.rules import (
    decide_and_close,
    first_complete_line,
    first_complete_word,
    human_word,
    normalise_word,
    rule_word,
    word_a_space_closes,
    word_rule_problem,
)
from harness.words.segmenters import first_segment, spaceless_script

WOMAN_AT_LAPTOP = "\U0001f469\u200d\U0001f4bb"
FLAG = "\U0001f1e9\U0001f1ea"


# ------------------------------------------------------------------------------------------------- the rule itself
@pytest.mark.parametrize(
    ("response", "mode", "segmenter", "expected"),
    [
        ("Sonnenschirm, der viel Schatten spendet", "exact", "spaces", ("sonnenschirm", True)),
        ("tisch und stühle", "exact", "spaces", ("tisch", True)),
        ("tisch und stühle", "whole", "spaces", ("tisch und stühle", False)),
        ("Tisch", "exact", "spaces", ("tisch", False)),
        ("tight-lipped", "exact", "spaces", ("tight-lipped", False)),
        ("  ...  ", "exact", "spaces", (None, False)),
        ("苹果", "exact", "characters", ("苹", True)),
        ("苹果", "whole", "characters", ("苹果", False)),
        ("「猫」", "exact", "characters", ("猫", False)),
        # the study's rule keeps a phrase whole, as its notebooks did
        ("tisch und stühle", "paper", "spaces", ("tisch und stühle", False)),
    ],
)
def test_human_word_is_the_models_first_word(
    response: str, mode: str, segmenter: str, expected: tuple[str | None, bool]
) -> None:
    assert human_word(response, mode, segmenter) == expected


def test_a_phrase_and_a_model_sample_give_the_same_first_word() -> None:
    # What a person typed and what a model wrote after the same context go through one function.
    person = human_word("Tisch und Stühle", "exact")[0]
    model = decide_and_close(" Tisch und", ended=False, depth=3, mode="exact", max_new_tokens=32)[0]
    assert person == "tisch" and model == ("word", "tisch")


def test_emoji_are_one_word_and_invisible_characters_none() -> None:
    assert normalise_word(WOMAN_AT_LAPTOP) == WOMAN_AT_LAPTOP  # was a lone U+200D
    assert normalise_word(f"«{WOMAN_AT_LAPTOP}»!") == WOMAN_AT_LAPTOP
    assert normalise_word(FLAG) == FLAG
    assert normalise_word("\u200d") == "" and normalise_word("\u200b") == ""
    assert normalise_word("caf\u00e9") == "café" and normalise_word("Cafe\u0301") == "cafe\u0301"
    assert human_word(f"{WOMAN_AT_LAPTOP} coding", "exact") == (WOMAN_AT_LAPTOP, True)
    # Symbols that are not emoji still go, as before.
    assert normalise_word("$100") == "100" and normalise_word("→") == ""


def test_a_grapheme_is_final_only_once_the_next_one_has_started() -> None:
    woman = WOMAN_AT_LAPTOP[0]
    # The woman alone could still become the woman at a laptop: open, under either segmenter.
    assert first_complete_word(woman, ended=False, segmenter="characters") == (woman, False)
    assert first_complete_word(woman + "\u200d", ended=False, segmenter="characters") == (woman + "\u200d", False)
    assert first_complete_word(WOMAN_AT_LAPTOP + "x", ended=False, segmenter="characters") == (WOMAN_AT_LAPTOP, True)
    assert first_complete_word(woman, ended=False) == (woman, False)
    assert word_a_space_closes(woman, "exact", "characters") == woman


def test_the_whole_rule_ends_at_a_line_break() -> None:
    assert first_complete_line(" Tisch und", ended=False) == ("tisch und", False)
    assert first_complete_line(" Tisch und Stühle.\nDann", ended=False) == ("tisch und stühle", True)
    assert first_complete_line("\n...\n Tisch", ended=True) == ("tisch", True)
    kw: dict[str, Any] = {"mode": "whole", "max_new_tokens": 4}
    assert decide_and_close(" Tisch und", ended=False, depth=2, **kw) == (("open", ""), None)
    assert decide_and_close(" Tisch und", ended=False, depth=4, **kw) == (("reject", "truncated"), None)
    assert decide_and_close(" Tisch und", ended=True, depth=3, **kw) == (("word", "tisch und"), None)
    assert word_a_space_closes(" Tisch", "whole") is None  # a space ends no phrase


def test_replies_are_cut_by_the_same_rule() -> None:
    assert parse_word_list("1. 苹果\n2. 香蕉", "exact", "characters") == ["苹", "香"]
    assert parse_word_list("1. tisch und stühle\n2. bank", "whole") == ["tisch und stühle", "bank"]
    assert first_word_of_reply("Tisch und Stühle.", "whole") == "tisch und stühle"
    assert rule_word("苹果", "exact", "characters") == "苹"


def test_scripts_without_spaces_are_recognised() -> None:
    assert [spaceless_script(t) for t in ("Tisch", "苹果", "ねこ", "カメラ", "แมว")] == [
        None,
        "Han",
        "Hiragana",
        "Katakana",
        "Thai",
    ]


def test_jieba_cuts_chinese_words_within_its_window() -> None:
    pytest.importorskip("jieba")
    assert first_segment("研究生命的起源", "jieba") == "研究"
    assert human_word("苹果很甜", "exact", "jieba") == ("苹果", True)
    # A sample is decided once its chunk is closed (whitespace, the end) or longer than the window (8 characters);
    # punctuation is removed, not a boundary, on both sides alike.
    assert first_complete_word("苹果", ended=False, segmenter="jieba") == ("苹果", False)
    assert first_complete_word("苹果，", ended=False, segmenter="jieba") == ("苹果", False)
    assert first_complete_word("苹果， ", ended=False, segmenter="jieba") == ("苹果", True)
    assert first_complete_word("研究生命的起源是什么", ended=False, segmenter="jieba") == ("研究", True)
    # jieba cuts by context: 走到 is one word in 走到了, two alone. A model's word is checked for what holds alone.
    assert first_complete_word("走到了", ended=False, segmenter="jieba") == ("走到", False)
    assert rule_word("走到", "exact", "jieba") == "走"
    assert word_rule_problem("走到", "exact", "jieba") is None
    assert word_rule_problem("走到学校很远的地方", "exact", "jieba") is not None  # longer than the window
    assert word_rule_problem("走，", "exact", "jieba") is not None


def test_a_person_and_a_model_writing_the_same_text_get_the_same_word() -> None:
    """People's answers reach the rule normalised by their loader (punctuation removed); a model's text is read the
    same way, so the same text gives the same word on both sides under every segmenter."""
    pytest.importorskip("jieba")
    for text in ("走，到了", "研究，生命的起源", "well-known", "「苹果」树", "Tisch, und Stühle"):
        for segmenter in ("spaces", "characters", "jieba"):
            person = human_word(normalise_word(text), "exact", segmenter)[0]
            model = first_complete_word(text, ended=True, segmenter=segmenter)[0]
            assert person == model, (text, segmenter)
    assert first_complete_word("走，到了", ended=True, segmenter="jieba")[0] == "走到"


def test_fugashi_cuts_japanese_words() -> None:
    pytest.importorskip("fugashi")
    pytest.importorskip("unidic_lite")
    assert human_word("学生です", "exact", "fugashi") == ("学生", True)


# ------------------------------------------------------------------------------------------------- tasks over files
CLOZE_TASK = """\
task: {name}
version: 1
loader: generic_cloze
data:
  files: norms.csv
  group_by: [item]
  id: "{{{{ item }}}}"
  context: context
  human: {{shape: long, responses: guess, counts: n}}
request: sample_words
params: {params}
scorers: [tvd, {{name: human_control, args: {{n_splits: 4}}}}, top1, entropy]
"""


def _norms(root: Path, rows: list[tuple[str, str, str, int]]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    lines = ["item,context,guess,n"] + [f'{i},"{c}","{g}",{n}' for i, c, g, n in rows]
    (root / "norms.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _run(cli: Any, tmp_path: Path, name: str, params: str, *, check: bool = True) -> Any:
    task_file = tmp_path / f"{name}.yaml"
    task_file.write_text(CLOZE_TASK.format(name=name, params=params))
    runs = tmp_path / "runs"
    data = tmp_path / "data"
    return cli(
        "run",
        "--tasks",
        str(task_file),
        "--model",
        "mock:test",
        "--data-dir",
        str(data),
        "--output-dir",
        str(runs),
        check=check,
    )


def _samples(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    path = next((tmp_path / "runs" / "mock__test").glob(f"samples_{name}_*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


GERMAN = [
    ("a", "Im Garten steht ein", "Sonnenschirm, der viel Schatten spendet", 3),
    ("a", "Im Garten steht ein", "Sonnenschirm", 2),
    ("a", "Im Garten steht ein", "Tisch und Stühle", 4),
    ("a", "Im Garten steht ein", "Baum", 1),
    ("b", "Wir essen am", "Tisch", 6),
    ("b", "Wir essen am", "Abend", 4),
]


def test_german_phrases_count_as_their_first_word_and_the_run_says_so(cli: Any, tmp_path: Path) -> None:
    _norms(tmp_path / "data", GERMAN)
    result = _run(cli, tmp_path, "de-cloze", "{n_samples: 50}")
    samples = _samples(tmp_path, "de-cloze")
    assert samples[0]["human"]["counts"] == {"sonnenschirm": 5, "tisch": 4, "baum": 1}
    assert samples[1]["human"]["counts"] == {"tisch": 6, "abend": 4}
    assert samples[0]["meta"]["n_human_cut"] == 7 and samples[1]["meta"]["n_human_cut"] == 0
    results = json.loads((tmp_path / "runs" / "mock__test" / "results.json").read_text())
    words = results["data_sources"]["de-cloze"]["words"]
    assert words == {"mode": "exact", "segmenter": "spaces", "n_responses": 20, "n_cut": 7}
    assert "note: task de-cloze: 7 of 20 human responses (35.0%) held more than one word" in result.stderr


def test_whole_responses_keep_phrases_on_both_sides(cli: Any, tmp_path: Path) -> None:
    _norms(tmp_path / "data", GERMAN)
    _run(cli, tmp_path, "de-whole", "{n_samples: 50, mode: whole}")
    samples = _samples(tmp_path, "de-whole")
    assert samples[0]["human"]["counts"] == {
        "tisch und stühle": 4,
        "sonnenschirm der viel schatten spendet": 3,
        "sonnenschirm": 2,
        "baum": 1,
    }
    assert samples[0]["arguments"]["mode"] == "whole"


CHINESE = [
    ("a", "我今天早上吃了一个", "苹果", 6),
    ("a", "我今天早上吃了一个", "香蕉", 3),
    ("a", "我今天早上吃了一个", "鸡蛋", 1),
    ("b", "他每天都去", "学校", 7),
    ("b", "他每天都去", "公园", 3),
]


def test_chinese_under_the_spaces_rule_is_refused_in_one_line(cli: Any, tmp_path: Path) -> None:
    _norms(tmp_path / "data", CHINESE)
    result = _run(cli, tmp_path, "zh-cloze", "{n_samples: 50}", check=False)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "100% of the people's responses are written in Han script" in lines[0]
    assert "params.segmenter" in lines[0]


def test_chinese_by_characters_compares_first_characters(cli: Any, tmp_path: Path) -> None:
    _norms(tmp_path / "data", CHINESE)
    _run(cli, tmp_path, "zh-chars", "{n_samples: 50, segmenter: characters}")
    samples = _samples(tmp_path, "zh-chars")
    assert samples[0]["human"]["counts"] == {"苹": 6, "香": 3, "鸡": 1}
    assert samples[1]["human"]["counts"] == {"学": 7, "公": 3}
    # The mock's words go through the same rule: every model word is one character.
    assert all(len(word) == 1 for s in samples for word in s["response"]["counts"])


def test_chinese_by_jieba_keeps_words(cli: Any, tmp_path: Path) -> None:
    pytest.importorskip("jieba")
    _norms(tmp_path / "data", CHINESE)
    _run(cli, tmp_path, "zh-jieba", "{n_samples: 50, segmenter: jieba}")
    samples = _samples(tmp_path, "zh-jieba")
    assert samples[0]["human"]["counts"] == {"苹果": 6, "香蕉": 3, "鸡蛋": 1}


def test_the_study_rule_takes_no_segmenter(cli: Any, tmp_path: Path) -> None:
    _norms(tmp_path / "data", CHINESE)
    result = _run(cli, tmp_path, "zh-paper", "{n_samples: 50, mode: paper, segmenter: characters}", check=False)
    assert result.returncode != 0 and "the study's word rule (mode: paper) cuts at spaces only" in result.stderr


def test_a_segmenter_whose_extra_is_missing_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from harness.extras import MissingExtraError
    from harness.words.segmenters import check_segmenter

    monkeypatch.setitem(sys.modules, "jieba", None)
    with pytest.raises(MissingExtraError, match=r"^the segmenter 'jieba' needs the 'zh' extra, which is not installed"):
        check_segmenter("jieba")


def test_validate_applies_the_word_rule_to_the_first_rows(cli: Any, tmp_path: Path) -> None:
    _norms(tmp_path / "data", CHINESE)
    refused = tmp_path / "zh.yaml"
    refused.write_text(CLOZE_TASK.format(name="zh-cloze", params="{n_samples: 50}"))
    result = cli("validate", str(refused), "--data-dir", str(tmp_path / "data"), check=False)
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"error: {refused}: task zh-cloze: 100% of the people's responses are written in Han"
    )
    cut = tmp_path / "chars.yaml"
    cut.write_text(CLOZE_TASK.format(name="zh-chars", params="{n_samples: 50, segmenter: characters}"))
    result = cli("validate", str(cut), "--data-dir", str(tmp_path / "data"))
    assert "make 2 instances; the word rule cuts 20 of 20 responses to a first word" in result.stdout
