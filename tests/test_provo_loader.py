"""The Provo loader: the official release and the derived tables give the instances the seed paper evaluated.

The official-format fixture (``tests/fixtures/provo``) is small and hand-made, Windows-1252 encoded with a
Mac-Roman artefact (``doesnÕt``), CRLF line ends, an unsorted passage order, missing responses (empty and ``NA``),
punctuation-only responses, responses that normalise to the same word and a response repeated on two rows.
Tests on the real derived files read them from ``HARNESS_DATA_DIR`` (default ``../shared/data`` beside the repo)
and are skipped only where that directory is absent.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import urllib.error
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.data.loaders import LoadedData, takes_options
from harness.errors import DataNotFoundError, HarnessError
from harness.instances import ClozeInstance
from harness.options import Option, OptionError, Options, positive_int, text
from harness.plugins.loaders import provo
from harness.plugins.loaders.provo import load_provo
from harness.words.rules import normalise_word

FIXTURE_DIR = Path(__file__).parent / "fixtures" / "provo"
FIXTURE = FIXTURE_DIR / "Provo_Corpus-Predictability_Norms.csv"


def _real_data_dir() -> Path:
    env = os.environ.get("HARNESS_DATA_DIR")
    return Path(env).expanduser() if env else Path(__file__).resolve().parents[2] / "shared" / "data"


REAL = _real_data_dir()
needs_real = pytest.mark.skipif(not (REAL / "provo").is_dir(), reason=f"real Provo data not at {REAL / 'provo'}")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach the network; the download tests replace the opener explicitly."""
    monkeypatch.setenv("HARNESS_OFFLINE", "1")


def _meta(text_id: int, word_num: int, raw: int, dropped: int = 0, missing: int = 0, unique: int = 0) -> dict:
    return {
        "text_id": text_id,
        "word_num": word_num,
        "n_human_raw": raw,
        "n_human_dropped": dropped,
        "n_human_missing": missing,
        "n_unique_raw": unique,
    }


# Checked by hand against the fixture rows.
EXPECTED = [
    ClozeInstance(
        id="1-2",
        context="The",
        target="cat",
        target_raw="cat",
        # "cat" 5 + "cat." 1 merge; "TRUE" (spreadsheet artefact) -> "true"; "?" is dropped
        human_counts={"cat": 6, "dog": 3, "true": 1},
        meta=_meta(1, 2, raw=11, dropped=1, unique=5),
    ),
    ClozeInstance(
        id="1-3",
        context="The cat",
        target="doesnõt",  # the Mac-Roman artefact is kept, as the seed kept it
        target_raw="doesnÕt",
        human_counts={"doesnt": 4, "is": 3, "likes": 2},
        meta=_meta(1, 3, raw=9, missing=1, unique=3),  # the empty response (count 1) is missing
    ),
    ClozeInstance(
        id="1-4",
        context="The cat doesnÕt",
        target="like",
        target_raw="like",
        human_counts={"like": 7, "love": 2},  # "like" is on two rows (6 + 1); "," is dropped
        meta=_meta(1, 4, raw=10, dropped=1, unique=3),
    ),
    ClozeInstance(
        id="1-6",
        context="The cat doesnÕt like wet",
        target="grass",
        target_raw="grass.",
        human_counts={"grass": 8, "water": 2},
        meta=_meta(1, 6, raw=10, unique=2),
    ),
    ClozeInstance(
        id="2-2",
        context="Mr.",
        target="smith",
        target_raw="Smith",
        human_counts={"smith": 3, "jones": 2},
        meta=_meta(2, 2, raw=5, missing=1, unique=2),  # the NA response is missing
    ),
    ClozeInstance(
        id="2-3",
        context="Mr. Smith",
        target="said",
        target_raw="said,",
        human_counts={"said": 4, "andor": 1},
        meta=_meta(2, 3, raw=5, unique=2),
    ),
    ClozeInstance(
        id="2-4",
        context="Mr. Smith said,",
        target="go",
        target_raw='"Go',
        human_counts={"go": 2, "i": 2, "hello": 1},  # ties in alphabetical order; "--" is dropped
        meta=_meta(2, 4, raw=6, dropped=1, unique=4),
    ),
    ClozeInstance(
        id="2-5",
        context='Mr. Smith said, "Go',
        target="home",
        target_raw='home."',
        human_counts={"home": 5},
        meta=_meta(2, 5, raw=5, unique=1),
    ),
]


def _cloze(data: LoadedData) -> list[ClozeInstance]:
    assert all(isinstance(i, ClozeInstance) for i in data.instances)
    return data.instances  # type: ignore[return-value]


def _copy_fixture(tmp_path: Path, name: str = provo.OFFICIAL_CSV) -> Path:
    (tmp_path / "provo").mkdir(exist_ok=True)
    dest = tmp_path / "provo" / name
    shutil.copyfile(FIXTURE, dest)
    return dest


# ------------------------------------------------------------------------------------------- official format


def test_official_fixture_gives_the_hand_checked_instances() -> None:
    data = load_provo({"path": "provo"}, FIXTURE_DIR.parent)
    assert data.instances == EXPECTED
    assert [list(i.human_counts) for i in _cloze(data)] == [list(e.human_counts) for e in EXPECTED]
    assert data.source["format"] == "official"
    assert data.source["encoding"] == "cp1252"
    assert data.source["files"] == [str(FIXTURE)]
    assert "word_column_mismatches" not in data.source


def test_utf8_copy_of_the_official_file_gives_the_same_instances(tmp_path: Path) -> None:
    (tmp_path / "provo").mkdir()
    text = FIXTURE.read_bytes().decode("cp1252")
    (tmp_path / "provo" / provo.OFFICIAL_CSV).write_bytes(text.encode("utf-8-sig"))  # with a BOM, as Excel writes
    data = load_provo({}, tmp_path)
    assert data.instances == EXPECTED
    assert data.source["encoding"] == "utf-8"


def test_seed_tsv_variant_gives_the_same_instances(tmp_path: Path) -> None:
    rows = list(csv.reader(io.StringIO(FIXTURE.read_bytes().decode("cp1252"), newline="")))
    (tmp_path / "provo").mkdir()
    with (tmp_path / "provo" / provo.SEED_TSV).open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, delimiter="\t").writerows(rows)
    data = load_provo({"format": "official"}, tmp_path)
    assert data.instances == EXPECTED
    assert data.source["files"] == [str(tmp_path / "provo" / provo.SEED_TSV)]


def test_auto_prefers_the_official_release(tmp_path: Path) -> None:
    _copy_fixture(tmp_path)
    (tmp_path / "provo" / provo.POSITIONS_JSONL).write_text("", encoding="utf-8")
    assert load_provo({}, tmp_path).source["format"] == "official"
    with pytest.raises(HarnessError, match=r"found no instances in .*provo_positions\.jsonl"):
        load_provo({"format": "positions_jsonl"}, tmp_path)


def test_a_loader_receives_its_parsed_options_with_every_default(tmp_path: Path) -> None:
    """``takes_options`` hands the loader what ``Options.parse`` returns: converted, every declared option present,
    at its declared default when not given (so a loader repeats no default, and ``--options`` shows the one used)."""
    got: list[Mapping[str, Any]] = []

    @takes_options(Options(Option("n", positive_int, 3, "how many"), Option("name", text, "x", "a name")))
    def load_tiny(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
        got.append(options)
        return LoadedData([ClozeInstance(id="1", context="a", target="b", human_counts={"b": 1})], "sha256:0")

    load_tiny({}, tmp_path)
    load_tiny({"n": "5"}, tmp_path)
    assert got == [{"n": 3, "name": "x"}, {"n": 5, "name": "x"}]
    assert type(got[1]["n"]) is int
    with pytest.raises(OptionError, match=r"data options of loader 'tiny': option 'n': expected a positive integer"):
        load_tiny({"n": 0}, tmp_path)
    assert len(got) == 2  # a bad value never reaches the loader


def test_repair_mac_roman_restores_the_apostrophe() -> None:
    data = load_provo({"repair_mac_roman": True}, FIXTURE_DIR.parent)
    by_id = {i.id: i for i in _cloze(data)}
    assert by_id["1-3"].target_raw == "doesn’t"
    assert by_id["1-3"].target == "doesnt"
    assert by_id["1-4"].context == "The cat doesn’t"
    assert data.source["repair_mac_roman"] is True


def test_word_column_disagreement_is_reported_not_fatal(tmp_path: Path) -> None:
    path = _copy_fixture(tmp_path)
    path.write_bytes(path.read_bytes().replace(b'"grass.","grass"', b'"grassy","grass"'))
    data = load_provo({}, tmp_path)
    assert data.source["word_column_mismatches"] == {"count": 1, "first": ["1-6"]}
    assert data.instances == EXPECTED


# ------------------------------------------------------------------------------------------- real derived data


@pytest.fixture(scope="module")
def real_jsonl() -> list[ClozeInstance]:
    return _cloze(load_provo({"format": "positions_jsonl"}, REAL))


@needs_real
def test_real_positions_counts_and_first_and_last_records(real_jsonl: list[ClozeInstance]) -> None:
    instances = real_jsonl
    assert len(instances) == 2687
    assert len({i.meta["text_id"] for i in instances}) == 55
    assert sum(i.meta["n_human_raw"] for i in instances) == 107785
    ids = [i.id for i in instances]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids, key=lambda s: tuple(int(x) for x in s.split("-")))
    assert "55-3" not in ids  # absent from every seed file (SOURCE.md)

    first = instances[0]
    assert (first.id, first.context, first.target, first.target_raw) == ("1-2", "There", "are", "are")
    assert first.human_counts == {
        "are": 16, "is": 9, "once": 4, "will": 4, "was": 3, "birth": 1, "comes": 1, "seems": 1, "were": 1
    }  # fmt: skip
    last = instances[-1]
    assert (last.id, last.target, last.target_raw) == ("55-62", "writing", "writing.")
    assert last.context.endswith("on that most unreliable and detestable profession,")
    assert last.human_counts["which"] == 5 and last.human_counts["writing"] == 4
    assert last.meta["n_human_raw"] == 39

    by_id = {i.id: i for i in instances}
    assert by_id["18-3"].meta["n_human_raw"] == 82  # two norm rows merged by the seed (SOURCE.md)
    assert by_id["51-25"].meta["n_human_raw"] == 32
    assert by_id["27-44"].target_raw == "doesnÕt"
    assert by_id["5-2"].human_counts["mr"] == 3  # "mr." 2 + "mr" 1


@needs_real
def test_real_normalisation_drops_and_merges(real_jsonl: list[ClozeInstance]) -> None:
    """The numbers stated in docs/data.md."""
    raw = sum(i.meta["n_human_raw"] for i in real_jsonl)
    dropped = sum(i.meta["n_human_dropped"] for i in real_jsonl)
    kept = sum(sum(i.human_counts.values()) for i in real_jsonl)
    assert raw == kept + dropped
    assert dropped == 75
    assert sum(1 for i in real_jsonl if i.meta["n_human_dropped"]) == 62
    assert sum(i.meta["n_unique_raw"] for i in real_jsonl) == 39784
    assert sum(len(i.human_counts) for i in real_jsonl) == 39715  # 66 punctuation-only pairs dropped, 3 merged
    assert all(i.human_counts for i in real_jsonl)


@needs_real
def test_real_totals_match_the_files_total_response_count(real_jsonl: list[ClozeInstance]) -> None:
    with (REAL / "provo" / provo.POSITIONS_JSONL).open(encoding="utf-8") as handle:
        totals = {f"{r['text_id']}-{r['word_num']}": r["total_response_count"] for r in map(json.loads, handle)}
    assert {i.id: i.meta["n_human_raw"] for i in real_jsonl} == totals


@needs_real
def test_real_jsonl_and_long_csv_give_identical_instances(real_jsonl: list[ClozeInstance]) -> None:
    long = load_provo({"format": "long_csv"}, REAL)
    assert long.instances == real_jsonl
    assert [list(i.human_counts) for i in _cloze(long)] == [list(i.human_counts) for i in real_jsonl]


@needs_real
@pytest.mark.parametrize("fmt", ["positions_jsonl", "long_csv"])
def test_real_contexts_follow_the_rebuild_rule(fmt: str) -> None:
    """Within a passage each context is the previous context, a space and the previous target as printed."""
    previous: ClozeInstance | None = None
    for inst in _cloze(load_provo({"format": fmt}, REAL)):
        if previous is not None and previous.meta["text_id"] == inst.meta["text_id"]:
            gap = inst.meta["word_num"] - previous.meta["word_num"]
            if gap == 1:
                assert inst.context == previous.context + " " + previous.target_raw, inst.id
            else:  # only 55-3 is missing: 55-4 still continues the passage
                assert inst.context.startswith(previous.context + " " + previous.target_raw + " "), inst.id
        elif inst.meta["word_num"] == 2:
            assert " " not in inst.context, inst.id
        previous = inst


@needs_real
def test_real_data_written_in_official_format_gives_identical_instances(
    tmp_path: Path, real_jsonl: list[ClozeInstance]
) -> None:
    """The official reader applied to the real data (re-written in the norms' column layout) agrees with JSONL."""
    with (REAL / "provo" / provo.PASSAGES_CSV).open(encoding="utf-8", newline="") as handle:
        passages = {row["text_id"]: row["passage"] for row in csv.DictReader(handle)}
    (tmp_path / "provo").mkdir()
    with (
        (REAL / "provo" / provo.RESPONSES_CSV).open(encoding="utf-8", newline="") as src,
        (tmp_path / "provo" / provo.OFFICIAL_CSV).open("w", encoding="cp1252", newline="") as dst,
    ):
        writer = csv.writer(dst)
        writer.writerow(["Word_Unique_ID", "Text_ID", "Text", "Word_Number", "Word", "Response", "Response_Count"])
        for row in csv.DictReader(src):
            writer.writerow(
                ["QID", row["text_id"], passages[row["text_id"]], row["word_num"], row["target_word"],
                 row["response"], row["response_count"]]
            )  # fmt: skip
    data = load_provo({}, tmp_path)
    assert data.source["encoding"] == "cp1252"
    assert data.instances == real_jsonl


# ------------------------------------------------------------------------------------------------------ filters


def test_filters_keep_the_requested_passages_and_words() -> None:
    data = load_provo({"text_ids": [2], "max_word_num": 3}, FIXTURE_DIR.parent)
    assert [i.id for i in data.instances] == ["2-2", "2-3"]
    assert data.source["n_positions_in_file"] == 8
    assert data.source["text_ids"] == [2] and data.source["max_word_num"] == 3


@needs_real
def test_first_five_words_of_each_real_passage() -> None:
    instances = _cloze(load_provo({"max_word_num": 5}, REAL))
    assert len(instances) == 55 * 4 - 1  # words 2-5 of 55 passages; 55-3 is absent
    assert {i.meta["word_num"] for i in instances} == {2, 3, 4, 5}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"text_ids": [3]}, "provo data option 'text_ids': no passage with id [3]"),
        ({"text_ids": 2}, "option 'text_ids': expected a list of integers, got 2"),
        ({"max_word_num": 0}, "option 'max_word_num': expected a positive integer, got 0"),
        ({"max_word_num": "5"}, "option 'max_word_num': expected a positive integer, got '5'"),
        ({"format": "xml"}, "option 'format': expected one of 'auto', 'official', 'positions_jsonl', 'long_csv'"),
        ({"repair_mac_roman": "yes"}, "option 'repair_mac_roman': expected true or false, got 'yes'"),
        ({"path": ""}, "option 'path': expected a folder name, got ''"),
        # A misspelt option was once ignored, and the run used the default (every passage).
        (
            {"text_id": [1]},
            "unknown option 'text_id' (accepted: format, max_word_num, path, repair_mac_roman, text_ids)",
        ),
    ],
)
def test_bad_options_are_reported(options: dict, message: str) -> None:
    with pytest.raises(HarnessError) as info:
        load_provo(options, FIXTURE_DIR.parent)
    text = str(info.value)
    assert message in text and "\n" not in text, text
    if "no passage" not in message:
        assert text.startswith("data options of loader 'provo': "), text


def test_options_are_declared() -> None:
    assert load_provo.options.names() == ["path", "format", "text_ids", "max_word_num", "repair_mac_roman"]


# -------------------------------------------------------------------------------------------------- not found


def test_not_found_lists_every_path_and_how_to_point_at_a_copy(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError) as info:
        load_provo({}, tmp_path)
    message = str(info.value)
    assert "\n" not in message
    root = tmp_path / "provo"
    assert f"not found in {root}/" in message
    for name in (provo.OFFICIAL_CSV, provo.SEED_TSV, provo.POSITIONS_JSONL, provo.RESPONSES_CSV, provo.PASSAGES_CSV):
        assert name in message
    assert "--data-dir DIR" in message and "HARNESS_DATA_DIR=DIR" in message and "DIR/provo/" in message
    assert "https://osf.io/sjefs/" in message
    assert "HARNESS_OFFLINE" in message


def test_not_found_for_one_format_names_only_its_files(tmp_path: Path) -> None:
    (tmp_path / "norms").mkdir()
    (tmp_path / "norms" / provo.RESPONSES_CSV).write_text("text_id\n", encoding="utf-8")
    with pytest.raises(DataNotFoundError) as info:
        load_provo({"format": "long_csv", "path": "norms"}, tmp_path)
    message = str(info.value)
    assert f"not found in {tmp_path / 'norms'}/" in message and provo.PASSAGES_CSV in message
    assert provo.POSITIONS_JSONL not in message
    assert "DIR/norms/" in message


# ---------------------------------------------------------------------------------------------------- download


class _FakeResponse(io.BytesIO):
    pass


def test_download_writes_the_official_file_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")
    calls: list[tuple[str, float]] = []

    def fake_open(url: str, timeout: float) -> _FakeResponse:
        calls.append((url, timeout))
        return _FakeResponse(FIXTURE.read_bytes())

    monkeypatch.setattr(provo, "_open_url", fake_open)
    data = load_provo({}, tmp_path)
    assert calls == [(provo.OSF_NORMS_URL, provo.DOWNLOAD_TIMEOUT_S)]
    assert data.instances == EXPECTED
    assert data.source["downloaded_from"] == provo.OSF_NORMS_URL
    assert sorted(p.name for p in (tmp_path / "provo").iterdir()) == [provo.OFFICIAL_CSV]
    # once there, it is read, not fetched again
    load_provo({}, tmp_path)
    assert len(calls) == 1


def test_download_of_something_else_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")
    monkeypatch.setattr(provo, "_open_url", lambda url, timeout: _FakeResponse(b"<html>Sign in to OSF</html>"))
    with pytest.raises(DataNotFoundError, match="not the norms CSV"):
        load_provo({}, tmp_path)
    assert list((tmp_path / "provo").iterdir()) == []


def test_download_failure_is_part_of_the_not_found_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")

    def refuse(url: str, timeout: float) -> _FakeResponse:
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(provo, "_open_url", refuse)
    with pytest.raises(DataNotFoundError) as info:
        load_provo({}, tmp_path)
    assert "Name or service not known" in str(info.value) and "\n" not in str(info.value)
    assert list((tmp_path / "provo").iterdir()) == []


def test_no_download_for_a_derived_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")
    monkeypatch.setattr(provo, "_open_url", lambda url, timeout: pytest.fail("must not download"))
    with pytest.raises(DataNotFoundError):
        load_provo({"format": "positions_jsonl"}, tmp_path)


# ------------------------------------------------------------------------------------------------ malformed files


def _replace_in_fixture(tmp_path: Path, old: bytes, new: bytes) -> Path:
    path = _copy_fixture(tmp_path)
    content = path.read_bytes()
    assert old in content
    path.write_bytes(content.replace(old, new, 1))
    return path


def test_official_missing_column_names_file_and_column(tmp_path: Path) -> None:
    path = _replace_in_fixture(tmp_path, b'"Response_Count"', b'"Count"')
    with pytest.raises(HarnessError, match=re.escape(f"{path}: line 1: missing column 'Response_Count'")):
        load_provo({}, tmp_path)


def test_official_non_integer_count_names_file_line_and_field(tmp_path: Path) -> None:
    path = _replace_in_fixture(tmp_path, b'"jones",2,', b'"jones",two,')
    with pytest.raises(
        HarnessError, match=re.escape(f"{path}: line 3: field 'Response_Count': expected an integer, got 'two'")
    ):
        load_provo({}, tmp_path)


def test_official_integral_float_counts_are_accepted(tmp_path: Path) -> None:
    _replace_in_fixture(tmp_path, b'"jones",2,', b'"jones",2.0,')
    assert load_provo({}, tmp_path).instances == EXPECTED


def test_official_word_number_beyond_the_passage(tmp_path: Path) -> None:
    path = _replace_in_fixture(tmp_path, b'home.""",5,1,5,', b'home.""",9,1,5,')
    with pytest.raises(HarnessError, match=re.escape(f"{path}: line 11: field 'Word_Number': word 9 is outside")):
        load_provo({}, tmp_path)


def _write_jsonl(tmp_path: Path, records: list[str]) -> Path:
    (tmp_path / "provo").mkdir()
    path = tmp_path / "provo" / provo.POSITIONS_JSONL
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    return path


GOOD_RECORD = {"text_id": 1, "word_num": 2, "context": "A", "target_word": "b", "human_responses": {"b": 2}}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("{not json", "line 2: not valid JSON"),
        (json.dumps({k: v for k, v in GOOD_RECORD.items() if k != "context"}), "line 2: field 'context': missing"),
        (json.dumps({**GOOD_RECORD, "word_num": "3"}), "line 2: field 'word_num': expected an integer"),
        (json.dumps({**GOOD_RECORD, "human_responses": {"b": 1.5}}), "line 2: field 'human_responses.b'"),
        (json.dumps({**GOOD_RECORD, "total_response_count": 3}), "line 2: field 'total_response_count': 3 is not"),
        (json.dumps(GOOD_RECORD), "line 2: field 'word_num': position 1-2 repeated"),
    ],
)
def test_malformed_jsonl_names_file_line_and_field(tmp_path: Path, record: str, message: str) -> None:
    path = _write_jsonl(tmp_path, [json.dumps(GOOD_RECORD), record])
    with pytest.raises(HarnessError, match=re.escape(f"{path}: {message}")):
        load_provo({}, tmp_path)


def _write_long(tmp_path: Path, responses: str, passages: str = "text_id,n_words,passage\n1,3,A b c.\n") -> Path:
    (tmp_path / "provo").mkdir()
    (tmp_path / "provo" / provo.PASSAGES_CSV).write_text(passages, encoding="utf-8")
    path = tmp_path / "provo" / provo.RESPONSES_CSV
    path.write_text(responses, encoding="utf-8")
    return path


LONG_HEADER = "text_id,word_num,target_word,response,response_count,total_response_count,response_proportion\n"


def test_long_csv_reads_a_small_table(tmp_path: Path) -> None:
    _write_long(tmp_path, LONG_HEADER + "1,3,c.,c,3,4,0.75\n1,3,c.,!,1,4,0.25\n1,2,b,b,1,1,1\n")
    instances = load_provo({}, tmp_path).instances
    b = ClozeInstance(
        id="1-2", context="A", target="b", target_raw="b", human_counts={"b": 1}, meta=_meta(1, 2, 1, unique=1)
    )
    c = ClozeInstance(
        id="1-3", context="A b", target="c", target_raw="c.", human_counts={"c": 3}, meta=_meta(1, 3, 4, 1, 0, 2)
    )
    assert instances == [b, c]


@pytest.mark.parametrize(
    ("responses", "message"),
    [
        ("text_id,word_num,response,response_count\n1,2,b,1\n", "line 1: missing column 'target_word'"),
        (LONG_HEADER + "1,2,b,b,x,1,1\n", "line 2: field 'response_count': expected an integer, got 'x'"),
        (LONG_HEADER + "1,2,B,b,1,1,1\n", "line 2: field 'target_word': 'B' but word 2 of passage 1"),
        (LONG_HEADER + "2,2,b,b,1,1,1\n", "line 2: field 'text_id': 2 not in"),
        (LONG_HEADER + "1,2,b,b,1,5,1\n", "line 2: field 'total_response_count': 5 is not the sum"),
        (LONG_HEADER + "1,7,b,b,1,1,1\n", "line 2: field 'word_num': word 7 is outside the passage's 3 words"),
        (LONG_HEADER + "1,2,b,b\n", "line 2: field 'response_count': missing"),
    ],
)
def test_malformed_long_csv_names_file_line_and_field(tmp_path: Path, responses: str, message: str) -> None:
    path = _write_long(tmp_path, responses)
    with pytest.raises(HarnessError, match=re.escape(f"{path}: {message}")):
        load_provo({}, tmp_path)


def test_passages_word_count_is_checked(tmp_path: Path) -> None:
    _write_long(tmp_path, LONG_HEADER, passages="text_id,n_words,passage\n1,4,A b c.\n")
    with pytest.raises(
        HarnessError, match=re.escape(f"{tmp_path / 'provo' / provo.PASSAGES_CSV}: line 2: field 'n_words'")
    ):
        load_provo({}, tmp_path)


# ------------------------------------------------------------------------------------------------------- hashing


def test_data_hash_is_stable_and_changes_with_one_byte(tmp_path: Path) -> None:
    path = _copy_fixture(tmp_path)
    first = load_provo({}, tmp_path).data_hash
    assert first == load_provo({}, tmp_path).data_hash
    assert first == load_provo({}, FIXTURE_DIR.parent).data_hash  # the name and bytes, not the directory
    assert first.startswith("sha256:")
    path.write_bytes(path.read_bytes().replace(b"0.4545", b"0.4546"))  # a column the loader does not even use
    assert load_provo({}, tmp_path).data_hash != first


@needs_real
def test_real_hash_covers_both_long_csv_files() -> None:
    long = load_provo({"format": "long_csv"}, REAL)
    assert long.source["files"] == [str(REAL / "provo" / provo.RESPONSES_CSV), str(REAL / "provo" / provo.PASSAGES_CSV)]
    assert long.data_hash != load_provo({"format": "positions_jsonl"}, REAL).data_hash


def test_normalise_word_is_what_the_loader_applies() -> None:
    """Guards the fixture's expectations against a silent change of the shared normaliser."""
    assert [normalise_word(w) for w in ("cat.", "TRUE", "?", "and/or", "--", "doesnÕt", '"Go')] == [
        "cat", "true", "", "andor", "", "doesnõt", "go"
    ]  # fmt: skip
