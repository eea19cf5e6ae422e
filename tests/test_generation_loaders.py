"""Loaders of the four multi-reference generation data sets: WMT'14 multi-ref, ASSET, DailyDialog++, WritingPrompts.

Each loader is checked on a small hand-made fixture in the release's exact format (``tests/fixtures/<set>/``, laid
out like the data root so that it can be passed as ``data_dir``), with the expected instances written out by hand;
on the real data under ``HARNESS_DATA_DIR`` (default ``../shared/data``) where it is present, for the counts the
provenance notes give and for identical instances from the official and derived formats; and on malformed
copies of the fixtures, for one-line errors that name the file, the line or record, and the field.

WritingPrompts is not on this project's machines, so its loader is tested on the fixture only; its download is
tested with a fake opener serving a hand-made archive. Its fixture folder has the data folder's own name
(``writingprompts``), so ``tests/fixtures`` is its data root, as for Provo; the raw files sit in
``writingprompts/writingPrompts/`` as the release's tarball has them, which also makes ``tests/fixtures/writingprompts``
usable as a data root (the loader looks in ``DATA/writingPrompts/`` when no ``path`` is given).
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import tarfile
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.data.loaders import LoadedData, hash_files
from harness.errors import DataNotFoundError, HarnessError
from harness.instances import GenerationInstance
from harness.plugins.loaders import writingprompts
from harness.plugins.loaders.asset import load_asset
from harness.plugins.loaders.dailydialog import load_dailydialog_pp
from harness.plugins.loaders.wmt14 import load_wmt14_multiref
from harness.plugins.loaders.writingprompts import load_writingprompts
from harness.registry.manager import get_registry
from tests.helpers import shared_data_dir

FIXTURES = Path(__file__).parent / "fixtures"
WMT_FIX = FIXTURES / "wmt14"
ASSET_FIX = FIXTURES / "asset"
DD_FIX = FIXTURES / "dailydialog"
# The WritingPrompts fixture folder has the data folder's own name, so tests/fixtures is its data root (as for Provo).
WP_FIX = FIXTURES
REAL = shared_data_dir()


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach the network; the download tests replace the opener explicitly."""
    monkeypatch.setenv("HARNESS_OFFLINE", "1")


def _gen(data: LoadedData) -> list[GenerationInstance]:
    out = []
    for instance in data.instances:
        assert isinstance(instance, GenerationInstance)
        out.append(instance)
    return out


def _copy(fixture: Path, tmp_path: Path) -> Path:
    """A writable copy of a fixture data root."""
    dest = tmp_path / "data"
    shutil.copytree(fixture, dest)
    return dest


def _copy_wp(tmp_path: Path) -> Path:
    """A writable data root holding a copy of the WritingPrompts fixture only."""
    dest = tmp_path / "data"
    shutil.copytree(WP_FIX / "writingprompts", dest / "writingprompts")
    return dest


def _one_line_error(call: Callable[[], Any], error: type[HarnessError] = HarnessError) -> str:
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    return message


def _require(*paths: Path) -> None:
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        pytest.skip(f"real data not present: {', '.join(missing)}")


def test_the_four_loaders_are_registered() -> None:
    registry = get_registry()
    assert registry.loader("wmt14_multiref") is load_wmt14_multiref
    assert registry.loader("asset") is load_asset
    assert registry.loader("dailydialog_pp") is load_dailydialog_pp
    assert registry.loader("writingprompts") is load_writingprompts


# =================================================================================================== WMT'14


# Checked by hand against tests/fixtures/wmt14/wmt14-multiref/original/wmt14-en-de.extra_refs.gz (gunzip it to read).
WMT_EXPECTED = [
    GenerationInstance(
        id="1",
        source="The weather was fine yesterday.",
        references=(
            "Gestern war das Wetter schön.",  # T-1 first
            "Das Wetter war gestern schön.",
            "Gestern war das Wetter gut.",
            "Gestern war schönes Wetter.",
            "Das Wetter war gestern gut.",
            "Gestern war das Wetter schön.",  # R5 repeats T, as many real extra references do
            "Gestern herrschte schönes Wetter.",
            "Das Wetter gestern war schön.",
            "Gestern war das Wetter angenehm.",
            "Gestern war das Wetter schön.",
            "Gestern war es schön.",
        ),
        language="de",
        meta={"sentence_number": 1},
    ),
    GenerationInstance(
        id="2",
        source="The mayor opened the new bridge on Monday.",
        references=(
            "Der Bürgermeister eröffnete am Montag die neue Brücke.",
            "Am Montag eröffnete der Bürgermeister die neue Brücke.",
            "Der Bürgermeister hat am Montag die neue Brücke eröffnet.",
            "Die neue Brücke wurde am Montag vom Bürgermeister eröffnet.",
            "Der Bürgermeister weihte am Montag die neue Brücke ein.",
            "Am Montag hat der Bürgermeister die neue Brücke eröffnet.",
            "Der Oberbürgermeister eröffnete am Montag die neue Brücke.",
            "Die neue Brücke eröffnete der Bürgermeister am Montag.",
            "Der Bürgermeister eröffnete die neue Brücke am Montag.",  # R8 has a trailing space in the file
            "Montag eröffnete der Bürgermeister die neue Brücke.",
            "Der Bürgermeister gab die neue Brücke am Montag frei.",
        ),
        language="de",
        meta={"sentence_number": 2},
    ),
    GenerationInstance(
        id="18",
        source="Prices rose by 3 percent.",
        references=(
            "Die Preise stiegen um 3 Prozent.",
            "Die Preise sind um 3 Prozent gestiegen.",
            "Die Preise stiegen um drei Prozent.",
            "Die Preise erhöhten sich um 3 Prozent.",
            "Die Preise stiegen um 3 %.",
            "Die Preise sind um 3 % gestiegen.",
            "Die Preise legten um 3 Prozent zu.",
            "Preise stiegen um 3 Prozent.",
            "Die Preise stiegen um 3 Prozent an.",
            "Die Preise stiegen um 3 Prozent.",
            "Um 3 Prozent stiegen die Preise.",
        ),
        language="de",
        meta={"sentence_number": 18},
    ),
]
WMT_GZ = Path("wmt14-multiref/original/wmt14-en-de.extra_refs.gz")


def test_wmt14_official_fixture_gives_the_hand_checked_instances() -> None:
    data = load_wmt14_multiref({"pair": "en-de"}, WMT_FIX)
    assert _gen(data) == WMT_EXPECTED
    assert data.source["format"] == "official"
    assert data.source["files"] == [str(WMT_FIX / WMT_GZ)]
    assert data.data_hash == hash_files([WMT_FIX / WMT_GZ])
    assert (data.source["n_sources"], data.source["n_references"]) == (3, 11)


def test_wmt14_jsonl_fixture_gives_the_same_instances() -> None:
    data = load_wmt14_multiref({"pair": "en-de", "format": "jsonl"}, WMT_FIX)
    assert _gen(data) == WMT_EXPECTED
    assert data.source["format"] == "jsonl"
    assert data.data_hash != load_wmt14_multiref({"pair": "en-de"}, WMT_FIX).data_hash  # other bytes were read


def test_wmt14_auto_falls_back_to_the_jsonl_and_sets_the_language() -> None:
    # The en-fr fixture has only the derived JSONL.
    data = load_wmt14_multiref({"pair": "en-fr"}, WMT_FIX)
    (instance,) = _gen(data)
    assert data.source["format"] == "jsonl"
    assert instance.id == "12" and instance.language == "fr" and instance.source == "The cat is sleeping."
    assert instance.references[:3] == ("Le chat dort.", "Le chat est en train de dormir.", "Le chat dort.")
    assert len(instance.references) == 11


def test_wmt14_max_references_keeps_the_original_reference_first() -> None:
    data = load_wmt14_multiref({"pair": "en-de", "max_references": 2}, WMT_FIX)
    assert [i.references for i in _gen(data)] == [e.references[:2] for e in WMT_EXPECTED]
    assert data.source["n_references"] == 2


def _wmt_lines() -> list[str]:
    return gzip.decompress((WMT_FIX / WMT_GZ).read_bytes()).decode("utf-8").split("\n")


def _write_wmt(tmp_path: Path, lines: list[str]) -> tuple[Path, Path]:
    data = _copy(WMT_FIX, tmp_path)
    path = data / WMT_GZ
    path.write_bytes(gzip.compress("\n".join(lines).encode("utf-8")))
    return data, path


def test_wmt14_tags_out_of_order_name_the_line(tmp_path: Path) -> None:
    lines = _wmt_lines()
    lines[4], lines[5] = lines[5], lines[4]  # R4-1 before R3-1
    data, path = _write_wmt(tmp_path, lines)
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de"}, data))
    assert message.startswith(f"{path}: line 5: field 'tag': expected 'R3-1'")
    assert "got 'R4-1'" in message


def test_wmt14_a_line_of_another_sentence_names_the_line(tmp_path: Path) -> None:
    lines = _wmt_lines()
    assert lines[19].startswith("R6-2\t")
    lines[19] = lines[19].replace("R6-2", "R6-3", 1)
    data, path = _write_wmt(tmp_path, lines)
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de"}, data))
    assert message.startswith(f"{path}: line 20: field 'tag': expected 'R6-2'") and "got 'R6-3'" in message


def test_wmt14_a_missing_line_is_found_where_the_next_source_should_start(tmp_path: Path) -> None:
    lines = _wmt_lines()
    del lines[7]  # R6-1
    data, path = _write_wmt(tmp_path, lines)
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de"}, data))
    assert message.startswith(f"{path}: line 8: field 'tag': expected 'R6-1'") and "got 'R7-1'" in message


def test_wmt14_a_truncated_file_names_the_sentence_it_ends_in(tmp_path: Path) -> None:
    lines = [line for line in _wmt_lines() if line][:-1]  # drop R10-18
    data, path = _write_wmt(tmp_path, lines)
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de"}, data))
    assert message == f"{path}: line 35: the file ends inside sentence 18: expected 'R10-18' on line 36"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda ls: ls[:24] + ls[12:24] + ls[24:], "line 25: field 'tag': sentence 2 repeated (first at line 13)"),
        (lambda ls: [ls[0].replace("\t", " ", 1), *ls[1:]], "line 1: field 'tag': expected 'S-n' then a tab"),
        (lambda ls: [ls[0], "T-1\t  ", *ls[2:]], "line 2: field 'T-1': empty sentence"),
        (lambda ls: [ls[1], ls[0], *ls[2:]], "line 1: field 'tag': expected a new source 'S-n'"),
    ],
    ids=["repeated-number", "no-tab", "empty-sentence", "no-source-first"],
)
def test_wmt14_malformed_official_file(tmp_path: Path, edit: Callable[[list[str]], list[str]], expected: str) -> None:
    data, path = _write_wmt(tmp_path, edit(_wmt_lines()))
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de"}, data))
    assert message.startswith(f"{path}: {expected}"), message


def test_wmt14_a_file_that_is_not_gzip_is_reported(tmp_path: Path) -> None:
    data = _copy(WMT_FIX, tmp_path)
    (data / WMT_GZ).write_bytes(b"S-1\tnot compressed\n")
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de"}, data))
    assert message.startswith(f"{data / WMT_GZ}: not a readable gzip file")


def test_wmt14_malformed_jsonl_names_line_and_field(tmp_path: Path) -> None:
    data = _copy(WMT_FIX, tmp_path)
    path = data / "wmt14-multiref" / "wmt14_en-de_multiref.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    records[1]["additional_references"].pop()
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de", "format": "jsonl"}, data))
    assert message == f"{path}: line 2: field 'additional_references': expected a list of 10 strings, got 9 items"
    records[1]["additional_references"].append(7)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-de", "format": "jsonl"}, data))
    assert message == f"{path}: line 2: field 'additional_references[9]': expected a string, got 7"


def test_wmt14_not_found_names_the_files_and_the_official_repository(tmp_path: Path) -> None:
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-fr"}, tmp_path), DataNotFoundError)
    assert f"not found in {tmp_path / 'wmt14-multiref'}/: looked for original/wmt14-en-fr.extra_refs.gz" in message
    assert "and wmt14_en-fr_multiref.jsonl" in message
    assert "--data-dir DIR" in message and "HARNESS_DATA_DIR=DIR" in message
    assert "https://github.com/facebookresearch/analyzing-uncertainty-nmt" in message
    # a named format looks only for its own file
    message = _one_line_error(lambda: load_wmt14_multiref({"pair": "en-fr", "format": "official"}, WMT_FIX))
    assert "wmt14_en-fr_multiref.jsonl" not in message and "wmt14-en-fr.extra_refs.gz" in message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"pair": "en-de", "paths": "x"},
            "data options of loader 'wmt14_multiref': unknown option 'paths' "
            "(accepted: format, max_references, pair, path, references)",
        ),
        # A required option that is missing is the loader's own check.
        ({}, "wmt14_multiref data option 'pair': expected one of en-de, en-fr, got None"),
        ({"pair": "de-en"}, "option 'pair': expected one of 'en-de', 'en-fr', got 'de-en'"),
        ({"pair": "en-de", "format": "gz"}, "option 'format': expected one of 'auto', 'official', 'jsonl', got 'gz'"),
        ({"pair": "en-de", "max_references": 12}, "'max_references': expected an integer from 1 to 11, got 12"),
        ({"pair": "en-de", "max_references": True}, "'max_references': expected an integer from 1 to 11, got True"),
        ({"pair": "en-de", "path": 3}, "option 'path': expected a folder name, got 3"),
    ],
)
def test_wmt14_bad_options(options: dict[str, Any], message: str) -> None:
    assert message in _one_line_error(lambda: load_wmt14_multiref(options, WMT_FIX))


@pytest.mark.parametrize(("pair", "language", "first_id"), [("en-de", "de", "1"), ("en-fr", "fr", "12")])
def test_wmt14_real_data_counts_and_formats_agree(pair: str, language: str, first_id: str) -> None:
    root = REAL / "wmt14-multiref"
    official_path = root / "original" / f"wmt14-{pair}.extra_refs.gz"
    _require(official_path, root / f"wmt14_{pair}_multiref.jsonl")
    official = load_wmt14_multiref({"pair": pair, "format": "official"}, REAL)
    derived = load_wmt14_multiref({"pair": pair, "format": "jsonl"}, REAL)
    instances = _gen(official)
    assert len(instances) == 500
    assert all(len(i.references) == 11 and all(i.references) and i.source for i in instances)
    assert {i.language for i in instances} == {language}
    assert instances[0].id == first_id
    numbers = [i.meta["sentence_number"] for i in instances]
    assert numbers == sorted(numbers) and len(set(numbers)) == 500
    assert official.instances == derived.instances
    assert load_wmt14_multiref({"pair": pair}, REAL).data_hash == official.data_hash == hash_files([official_path])


# ===================================================================================================== ASSET

# Checked by hand against tests/fixtures/asset/asset/dataset/asset.valid.{orig,simp.0-9}.
ASSET_EXPECTED = [
    GenerationInstance(
        id="0",
        source="The committee, which was formed in 1990, meets twice a year in the capital.",
        references=(
            "The committee was formed in 1990. It meets twice a year in the capital.",
            "The committee meets twice a year in the capital.",
            "Formed in 1990, the committee meets in the capital twice a year.",
            "The committee started in 1990 and meets two times a year in the capital.",
            "The committee meets in the capital twice a year. It was formed in 1990.",
            "The committee, formed in 1990, meets twice a year.",
            "A committee formed in 1990 meets twice each year in the capital.",
            "The committee was set up in 1990. It meets twice a year.",
            "The committee meets twice a year in the capital city.",  # leading no-break space stripped
            "The committee was formed in 1990 and meets in the capital.",
        ),
        language="en",
    ),
    GenerationInstance(
        id="1",
        source="Despite heavy rain, the festival attracted more than ten thousand visitors.",
        references=(
            "It rained a lot, but more than 10,000 people came to the festival.",
            "Despite heavy rain, the festival attracted more than ten thousand visitors.",  # a copy of the source
            "Many people visited the festival even though it rained.",
            "Over ten thousand people went to the festival in heavy rain.",
            "The festival had more than ten thousand visitors, even with heavy rain.",
            "The festival attracted more than ten thousand visitors despite the rain.",
            "Even with a lot of rain, over 10,000 visitors came to the festival.",
            "More than ten thousand people visited the festival despite the rain.",
            "The festival had over\u00a0ten thousand visitors despite heavy rain.",  # inner no-break space kept
            "Heavy rain did not stop more than ten thousand visitors.",
        ),
        language="en",
    ),
    GenerationInstance(
        id="2",
        source="Photosynthesis is the process by which green plants convert sunlight into chemical energy.",
        references=(
            "Photosynthesis is how green plants turn sunlight into energy.",
            "Green plants use photosynthesis to make energy from sunlight.",
            "In photosynthesis, plants change sunlight into chemical energy.",
            "Plants make food from sunlight. This is called photosynthesis.",
            "Photosynthesis is the way green plants make energy from sunlight.",
            "Green plants convert sunlight into chemical energy by photosynthesis.",
            "Photosynthesis turns sunlight into chemical energy in green plants.",
            "Photosynthesis is when green plants turn sunlight into chemical energy.",
            "Plants use sunlight to make chemical energy.",  # trailing space stripped
            "Green plants turn sunlight into chemical energy through photosynthesis.",
        ),
        language="en",
    ),
]
ASSET_DIR = Path("asset/dataset")


def test_asset_official_fixture_gives_the_hand_checked_instances() -> None:
    data = load_asset({"split": "valid"}, ASSET_FIX)
    assert _gen(data) == ASSET_EXPECTED
    assert data.source["format"] == "official" and data.source["n_stripped"] == 2
    assert data.source["files"] == [str(ASSET_FIX / ASSET_DIR / "asset.valid.orig")] + [
        str(ASSET_FIX / ASSET_DIR / f"asset.valid.simp.{k}") for k in range(10)
    ]
    # the release has no newline after the last line; the fixture is the same
    assert not (ASSET_FIX / ASSET_DIR / "asset.valid.orig").read_bytes().endswith(b"\n")


def test_asset_jsonl_fixture_gives_the_same_instances() -> None:
    data = load_asset({"split": "valid", "format": "jsonl"}, ASSET_FIX)
    assert _gen(data) == ASSET_EXPECTED
    assert data.source["n_stripped"] == 2  # the derived file keeps the released spaces, as the real one does
    assert data.data_hash == hash_files([ASSET_FIX / "asset" / "asset_valid.jsonl"])


def test_asset_a_trailing_newline_is_not_an_extra_line(tmp_path: Path) -> None:
    data = _copy(ASSET_FIX, tmp_path)
    for path in (data / ASSET_DIR).iterdir():
        path.write_bytes(path.read_bytes() + b"\n")
    assert _gen(load_asset({"split": "valid"}, data)) == ASSET_EXPECTED


def test_asset_a_short_file_is_reported_with_both_line_counts(tmp_path: Path) -> None:
    data = _copy(ASSET_FIX, tmp_path)
    path = data / ASSET_DIR / "asset.valid.simp.3"
    path.write_bytes(path.read_bytes().rsplit(b"\n", 1)[0])
    message = _one_line_error(lambda: load_asset({"split": "valid"}, data))
    assert message.startswith(f"{path}: 2 lines, expected 3 like asset.valid.orig")


def test_asset_an_empty_line_names_file_and_line(tmp_path: Path) -> None:
    data = _copy(ASSET_FIX, tmp_path)
    path = data / ASSET_DIR / "asset.valid.simp.7"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[1] = "   "
    path.write_text("\n".join(lines), encoding="utf-8")
    message = _one_line_error(lambda: load_asset({"split": "valid"}, data))
    assert message == f"{path}: line 2: field 'sentence': empty sentence"


def test_asset_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    data = _copy(ASSET_FIX, tmp_path)
    path = data / ASSET_DIR / "asset.valid.orig"
    path.write_bytes(path.read_bytes().replace(b"Photosynthesis", b"Photosynth\xe9sis", 1))
    message = _one_line_error(lambda: load_asset({"split": "valid"}, data))
    assert message.startswith(f"{path}: line 3: not valid UTF-8")


def test_asset_malformed_jsonl_names_line_and_field(tmp_path: Path) -> None:
    data = _copy(ASSET_FIX, tmp_path)
    path = data / "asset" / "asset_valid.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[2])
    record["references"] = record["references"][:9]
    lines[2] = json.dumps(record)
    path.write_text("\n".join(lines), encoding="utf-8")
    message = _one_line_error(lambda: load_asset({"split": "valid", "format": "jsonl"}, data))
    assert message == f"{path}: line 3: field 'references': expected a list of 10 strings, got 9 items"
    lines[2] = lines[1]
    path.write_text("\n".join(lines), encoding="utf-8")
    message = _one_line_error(lambda: load_asset({"split": "valid", "format": "jsonl"}, data))
    assert message == f"{path}: line 3: field 'id': 1 repeated (first at line 2)"


def test_asset_not_found_names_the_missing_file(tmp_path: Path) -> None:
    data = _copy(ASSET_FIX, tmp_path)
    (data / ASSET_DIR / "asset.valid.simp.9").unlink()
    message = _one_line_error(lambda: load_asset({"split": "valid", "format": "official"}, data), DataNotFoundError)
    assert "missing: asset.valid.simp.9" in message and "https://github.com/facebookresearch/asset" in message
    # with the official set incomplete, auto reads the derived file
    assert load_asset({"split": "valid"}, data).source["format"] == "jsonl"
    message = _one_line_error(lambda: load_asset({"split": "test"}, data), DataNotFoundError)
    assert f"not found in {data / 'asset'}/" in message and "asset_test.jsonl" in message
    assert "asset.test.orig" in message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"split": "valid", "n_refs": 5},
            "data options of loader 'asset': unknown option 'n_refs' (accepted: format, path, split)",
        ),
        ({}, "asset data option 'split': expected one of valid, test, got None"),
        ({"split": "train"}, "option 'split': expected one of 'valid', 'test', got 'train'"),
        ({"split": "valid", "format": "csv"}, "'format': expected one of 'auto', 'official', 'jsonl', got 'csv'"),
    ],
)
def test_asset_bad_options(options: dict[str, Any], message: str) -> None:
    assert message in _one_line_error(lambda: load_asset(options, ASSET_FIX))


@pytest.mark.parametrize(("split", "count", "stripped"), [("valid", 2000, 6), ("test", 359, 0)])
def test_asset_real_data_counts_and_formats_agree(split: str, count: int, stripped: int) -> None:
    _require(REAL / "asset" / "dataset" / f"asset.{split}.orig", REAL / "asset" / f"asset_{split}.jsonl")
    official = load_asset({"split": split, "format": "official"}, REAL)
    derived = load_asset({"split": split, "format": "jsonl"}, REAL)
    instances = _gen(official)
    assert len(instances) == count
    assert [i.id for i in instances] == [str(k) for k in range(count)]
    assert all(len(i.references) == 10 and all(i.references) and i.source for i in instances)
    assert official.instances == derived.instances
    # six valid simplifications (in simp.8 and simp.9) begin or end with spaces or no-break spaces
    assert official.source["n_stripped"] == derived.source["n_stripped"] == stripped
    assert load_asset({"split": split}, REAL).data_hash == official.data_hash


# ============================================================================================== DailyDialog++

# Checked by hand against tests/fixtures/dailydialog/dailydialog-plusplus/dataset/{dev,test-v1.0}.json.
DD_DEV_EXPECTED = [
    GenerationInstance(
        id="0",
        source="",
        turns=("Could you help me carry these boxes?", "Sure, where do they go?", "Up to the third floor, I'm afraid."),
        references=(
            "No problem, let's take the lift.",
            "Three floors? We'd better take a break halfway.",
            "Okay, I'll take the heavy ones.",
            "Then let's start right now.",
            "Fine, but you owe me lunch.",
        ),
        language="en",
        meta={"topic": "Ordinary Life"},
    ),
    GenerationInstance(
        id="1",
        source="",
        turns=("How was your exam?",),
        references=(
            "I think I passed.",
            "It was harder than I expected.",
            "Not bad, thanks for asking.",
            "I don't want to talk about it.",
            "Much easier than the last one!",
        ),
        language="en",
        meta={"topic": "School Life"},
    ),
    GenerationInstance(
        id="2",
        source="",
        turns=(
            "Is this seat taken?",
            "No, go ahead.",
            "Thanks. Busy day, isn't it?",
            "Yes, the whole city is out.",
            "Are you waiting for someone?",
        ),
        references=(
            "Yes, my sister should be here soon.",
            "No, I'm just resting my feet.",
            "Only for the bus.",  # "  Only for the bus.  " in the file
            "My friend, but she is always late.",
            "Not really, I just like watching people.",
        ),
        language="en",
        meta={},  # the website file's copy of this context has a different positive response: no topic
    ),
]
DD_DATASET = Path("dailydialog-plusplus/dataset")


def test_dailydialog_dev_fixture_gives_the_hand_checked_instances() -> None:
    data = load_dailydialog_pp({}, DD_FIX)
    assert _gen(data) == DD_DEV_EXPECTED
    files = [DD_FIX / DD_DATASET / "dev.json", DD_FIX / DD_DATASET / "test-v1.0.json"]
    assert data.source["files"] == [str(p) for p in files]
    assert data.data_hash == hash_files(files)
    assert (data.source["n_with_topic"], data.source["n_topic_mismatches"]) == (2, 1)


def test_dailydialog_test_split_has_no_topics() -> None:
    data = load_dailydialog_pp({"split": "test"}, DD_FIX)
    instances = _gen(data)
    assert [i.id for i in instances] == ["0", "1"]
    assert instances[1].turns == ("Did you feed the dog?", "I thought you did!", "No, I fed the cat.")
    assert instances[1].references[0] == "Then I'll feed him now." and len(instances[1].references) == 5
    assert all(i.meta == {} and i.source == "" for i in instances)
    assert data.source["files"] == [str(DD_FIX / DD_DATASET / "test.json")]


def test_dailydialog_dev_without_the_website_file_has_no_topics(tmp_path: Path) -> None:
    data_dir = _copy(DD_FIX, tmp_path)
    (data_dir / DD_DATASET / "test-v1.0.json").unlink()
    data = load_dailydialog_pp({"split": "dev"}, data_dir)
    assert [i.meta for i in _gen(data)] == [{}, {}, {}]
    assert [i.references for i in _gen(data)] == [e.references for e in DD_DEV_EXPECTED]
    assert data.data_hash == hash_files([data_dir / DD_DATASET / "dev.json"])


def _rewrite_dev(tmp_path: Path, edit: Callable[[list[dict[str, Any]]], None]) -> tuple[Path, Path]:
    data_dir = _copy(DD_FIX, tmp_path)
    path = data_dir / DD_DATASET / "dev.json"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    edit(records)
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    return data_dir, path


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda rs: rs[1].update(context="How was your exam?"), "line 2: field 'context': expected a non-empty list"),
        (lambda rs: rs[2]["positive_responses"].__setitem__(4, " "), "line 3: field 'positive_responses[4]': empty"),
        (lambda rs: rs[2].update(id=0), "line 3: field 'id': 0 repeated (first at line 1)"),
        (lambda rs: rs[0].pop("positive_responses"), "line 1: field 'positive_responses': missing"),
        (lambda rs: rs[0].update(id="0"), "line 1: field 'id': expected an integer, got '0'"),
    ],
    ids=["context-not-a-list", "empty-response", "repeated-id", "missing-field", "string-id"],
)
def test_dailydialog_malformed_records(
    tmp_path: Path, edit: Callable[[list[dict[str, Any]]], None], expected: str
) -> None:
    data_dir, path = _rewrite_dev(tmp_path, edit)
    message = _one_line_error(lambda: load_dailydialog_pp({}, data_dir))
    assert message.startswith(f"{path}: {expected}"), message


def test_dailydialog_malformed_website_file_names_the_field(tmp_path: Path) -> None:
    data_dir = _copy(DD_FIX, tmp_path)
    path = data_dir / DD_DATASET / "test-v1.0.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["data"][1]["paragraphs"][0]["responses"][3]["id"] = "1-p3"
    path.write_text(json.dumps(document), encoding="utf-8")
    message = _one_line_error(lambda: load_dailydialog_pp({}, data_dir))
    field = "data[1].paragraphs[0].responses[3].id"
    assert message == f"{path}: field '{field}': expected '<context id>p|a|r<k>', got '1-p3'"


def test_dailydialog_not_found_and_bad_options(tmp_path: Path) -> None:
    message = _one_line_error(lambda: load_dailydialog_pp({"split": "test"}, tmp_path), DataNotFoundError)
    assert str(tmp_path / DD_DATASET / "test.json") in message
    assert "https://github.com/iitmnlp/DailyDialog-plusplus" in message and "--data-dir DIR" in message
    message = _one_line_error(lambda: load_dailydialog_pp({"splits": "dev"}, DD_FIX))
    assert message == "data options of loader 'dailydialog_pp': unknown option 'splits' (accepted: path, split)"
    message = _one_line_error(lambda: load_dailydialog_pp({"split": "train"}, DD_FIX))
    where = "data options of loader 'dailydialog_pp'"
    assert message == f"{where}: option 'split': expected one of 'dev', 'test', got 'train'"


@pytest.mark.parametrize(("split", "count"), [("dev", 1028), ("test", 1142)])
def test_dailydialog_real_data_counts(split: str, count: int) -> None:
    _require(REAL / "dailydialog-plusplus" / "dataset" / f"{split}.json")
    data = load_dailydialog_pp({"split": split}, REAL)
    instances = _gen(data)
    assert len(instances) == count
    assert all(len(i.references) == 5 and 1 <= len(i.turns) <= 6 and i.source == "" for i in instances)
    assert len({i.id for i in instances}) == count
    assert load_dailydialog_pp({"split": split}, REAL).data_hash == data.data_hash
    if split == "dev" and (REAL / "dailydialog-plusplus" / "dataset" / "test-v1.0.json").is_file():
        # every dev context is in the website file, under one of the 10 DailyDialog topics
        assert data.source["n_with_topic"] == 1028 and data.source["n_topic_mismatches"] == 0
        assert len({i.meta["topic"] for i in instances}) == 10


# ============================================================================================= WritingPrompts

# Checked by hand against tests/fixtures/writingprompts/writingprompts/writingPrompts/test.wp_{source,target}:
# 12 pairs, 3 unique prompts after the 7-character cut, in order of first appearance:
#   0 "A robot writes poetry ."  lines 1, 6, 10 (an exact copy of 6: skipped), 12 ("[ CW ]" tag) -> 3 stories
#   1 "A dragon learns to bake ." lines 2, 3, 4 (line 2 after whitespace collapsing: skipped), 5 ("[ IP ]" tag),
#                                7, 9, 11 -> 6 stories
#   2 "here at all ."            line 8, untagged: "No tag " is cut like a tag -> 1 story
WP_DRAGON = GenerationInstance(
    id="1",
    source="A dragon learns to bake .",
    references=(
        "The dragon burned the first loaf . Then she tried again .",
        "She read a cookbook . It did not help .",
        "Bread , thought the dragon , is just slow fire .",
        "Flour everywhere .The end .",  # "<newline>" is deleted, not replaced by a space, as the recipe does
        "The oven was too small for her .",
        "In the end , the village ate well .",
    ),
    language="en",
    meta={"prompt_index": 1, "n_stories": 6},
)
WP_ROBOT = GenerationInstance(
    id="0",
    source="A robot writes poetry .",
    references=(
        "Beep boop , said the robot . It was a haiku .",  # a tab inside the story collapses to one space
        "Roses are red , circuits are blue .",
        "Zero . One . Zero . One .",
    ),
    language="en",
    meta={"prompt_index": 0, "n_stories": 3},
)
WP_UNTAGGED = GenerationInstance(
    id="2",
    source="here at all .",
    references=("A lonely story with no tag .",),
    language="en",
    meta={"prompt_index": 2, "n_stories": 1},
)
WP_RAW = Path("writingprompts/writingPrompts")


def test_writingprompts_fixture_applies_the_recipe() -> None:
    data = load_writingprompts({}, WP_FIX)
    assert _gen(data) == [WP_DRAGON]  # id 1: counted among all prompts before the filter
    files = [WP_FIX / WP_RAW / "test.wp_source", WP_FIX / WP_RAW / "test.wp_target"]
    assert data.source["files"] == [str(p) for p in files] and data.data_hash == hash_files(files)
    assert {k: data.source[k] for k in ("n_pairs", "n_unique_prompts", "n_distinct_stories")} == {
        "n_pairs": 12,
        "n_unique_prompts": 3,
        "n_distinct_stories": 10,
    }
    assert data.source["n_duplicate_stories_skipped"] == 2 and data.source["min_stories"] == 5


def test_writingprompts_min_and_max_stories() -> None:
    assert _gen(load_writingprompts({"min_stories": 3}, WP_FIX)) == [WP_ROBOT, WP_DRAGON]
    assert _gen(load_writingprompts({"min_stories": 1}, WP_FIX)) == [WP_ROBOT, WP_DRAGON, WP_UNTAGGED]
    with pytest.raises(HarnessError, match=r"no prompt has 7 or more distinct stories in .*test\.wp_source"):
        load_writingprompts({"min_stories": 7}, WP_FIX)
    (capped,) = _gen(load_writingprompts({"max_stories": 2}, WP_FIX))
    assert capped.references == WP_DRAGON.references[:2]
    assert capped.meta == {"prompt_index": 1, "n_stories": 6}  # the filter saw all 6


def test_writingprompts_recipe_jsonl_gives_the_same_instances() -> None:
    data = load_writingprompts({"format": "jsonl"}, WP_FIX)
    assert _gen(data) == [WP_DRAGON]
    assert data.source["format"] == "jsonl"
    # max_stories and a stricter min_stories apply to the JSONL too
    with pytest.raises(HarnessError, match=r"no prompt has 7 or more distinct stories in .*writingprompts_test\.jsonl"):
        load_writingprompts({"format": "jsonl", "min_stories": 7}, WP_FIX)
    (capped,) = _gen(load_writingprompts({"format": "jsonl", "max_stories": 1}, WP_FIX))
    assert capped.references == WP_DRAGON.references[:1]


def test_writingprompts_other_layouts(tmp_path: Path) -> None:
    # files directly in the data folder
    flat = tmp_path / "flat"
    (flat / "stories").mkdir(parents=True)
    for name in ("test.wp_source", "test.wp_target"):
        shutil.copy(WP_FIX / WP_RAW / name, flat / "stories" / name)
    assert _gen(load_writingprompts({"path": "stories"}, flat)) == [WP_DRAGON]
    # the tarball extracted into the data root (only looked at when path is not given)
    root = tmp_path / "root"
    shutil.copytree(WP_FIX / WP_RAW, root / "writingPrompts")
    assert _gen(load_writingprompts({}, root)) == [WP_DRAGON]
    with pytest.raises(DataNotFoundError):
        load_writingprompts({"path": "elsewhere"}, root)
    # so the fixture folder itself can be the data root too
    assert _gen(load_writingprompts({}, FIXTURES / "writingprompts")) == [WP_DRAGON]


def test_writingprompts_misaligned_files_name_the_short_one(tmp_path: Path) -> None:
    data = _copy_wp(tmp_path)
    target = data / WP_RAW / "test.wp_target"
    target.write_text("".join(target.read_text(encoding="utf-8").splitlines(keepends=True)[:11]), encoding="utf-8")
    message = _one_line_error(lambda: load_writingprompts({}, data))
    assert message.startswith(f"{target}: 11 lines, expected 12 like test.wp_source")
    source = data / WP_RAW / "test.wp_source"
    source.write_text(source.read_text(encoding="utf-8")[:-1] + "\n[ WP ] x\n[ WP ] y\n", encoding="utf-8")
    message = _one_line_error(lambda: load_writingprompts({}, data))
    assert message.startswith(f"{target}: 11 lines, expected 14 like test.wp_source")


def test_writingprompts_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    data = _copy_wp(tmp_path)
    target = data / WP_RAW / "test.wp_target"
    target.write_bytes(target.read_bytes().replace(b"cookbook", b"cookb\xf6\xf6k", 1))
    message = _one_line_error(lambda: load_writingprompts({}, data))
    assert message.startswith(f"{target}: line 3: not valid UTF-8")


def test_writingprompts_malformed_jsonl_names_line_and_field(tmp_path: Path) -> None:
    data = _copy_wp(tmp_path)
    path = data / "writingprompts" / "writingprompts_test.jsonl"
    record = json.loads(path.read_text(encoding="utf-8"))
    bad = {**record, "id": 2, "stories": "one story"}
    path.write_text(json.dumps(record) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    message = _one_line_error(lambda: load_writingprompts({"format": "jsonl"}, data))
    assert message.startswith(f"{path}: line 2: field 'stories': expected a non-empty list of strings")
    path.write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    message = _one_line_error(lambda: load_writingprompts({"format": "jsonl"}, data))
    assert message == f"{path}: line 2: field 'id': 1 repeated (first at line 1)"


def test_writingprompts_not_found_says_it_is_not_included_and_where_it_is(tmp_path: Path) -> None:
    message = _one_line_error(lambda: load_writingprompts({}, tmp_path), DataNotFoundError)
    assert "not included" in message
    assert writingprompts.RELEASE_URL in message
    assert f"not found in {tmp_path / 'writingprompts'}/: looked for test.wp_source + test.wp_target" in message
    assert f"(there and in writingPrompts/ and {tmp_path / 'writingPrompts'}/)" in message
    assert "and writingprompts_test.jsonl" in message
    assert "HARNESS_OFFLINE" in message and "--data-dir DIR" in message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"min_refs": 5},
            "data options of loader 'writingprompts': unknown option 'min_refs' (accepted: file, format, "
            "max_stories, min_stories, path, split)",
        ),
        ({"split": "dev"}, "option 'split': expected one of 'train', 'valid', 'test', got 'dev'"),
        ({"min_stories": 0}, "option 'min_stories': expected a positive integer, got 0"),
        ({"max_stories": "3"}, "option 'max_stories': expected a positive integer, got '3'"),
        ({"format": "tsv"}, "option 'format': expected one of 'auto', 'official', 'jsonl', got 'tsv'"),
        ({"file": ""}, "option 'file': expected a file name, got ''"),
    ],
)
def test_writingprompts_bad_options(options: dict[str, Any], message: str) -> None:
    assert message in _one_line_error(lambda: load_writingprompts(options, WP_FIX))


class _FakeResponse(io.BytesIO):
    pass


def _release_archive() -> bytes:
    """A stand-in for writingPrompts.tar.gz: the fixture's test split plus files that must not be extracted."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        members = {
            "../test.wp_source": b"[ WP ] a path outside the archive's folder\n",  # comes first; must be ignored
            "writingPrompts/train.wp_source": b"[ WP ] not wanted\n",
            "writingPrompts/train.wp_target": b"not wanted\n",
        }
        for name in ("test.wp_source", "test.wp_target"):
            members[f"writingPrompts/{name}"] = (WP_FIX / WP_RAW / name).read_bytes()
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def test_writingprompts_download_extracts_only_the_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")
    calls: list[str] = []

    def fake_open(url: str, timeout: float) -> _FakeResponse:
        calls.append(url)
        return _FakeResponse(_release_archive())

    monkeypatch.setattr(writingprompts, "_open_url", fake_open)
    data = load_writingprompts({}, tmp_path)
    assert calls == [writingprompts.RELEASE_URL]
    assert _gen(data) == [WP_DRAGON]
    assert data.source["downloaded_from"] == writingprompts.RELEASE_URL
    dest = tmp_path / "writingprompts" / "writingPrompts"
    assert sorted(p.name for p in dest.iterdir()) == ["test.wp_source", "test.wp_target"]
    assert (dest / "test.wp_source").read_bytes() == (WP_FIX / WP_RAW / "test.wp_source").read_bytes()
    assert not (tmp_path / "test.wp_source").exists() and not (tmp_path / "writingprompts" / "test.wp_source").exists()
    load_writingprompts({}, tmp_path)  # now read, not fetched again
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"<html>Access denied</html>", "failed"),
        (None, "the archive has no writingPrompts/valid.wp_target"),
    ],
    ids=["not-an-archive", "split-missing"],
)
def test_writingprompts_failed_download_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: bytes | None, reason: str
) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")
    body = payload if payload is not None else _release_archive()
    monkeypatch.setattr(writingprompts, "_open_url", lambda url, timeout: _FakeResponse(body))
    message = _one_line_error(lambda: load_writingprompts({"split": "valid"}, tmp_path), DataNotFoundError)
    assert f"Downloading {writingprompts.RELEASE_URL} failed" in message and reason in message
    assert list((tmp_path / "writingprompts").iterdir()) == []


def test_writingprompts_network_error_is_part_of_the_not_found_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")

    def refuse(url: str, timeout: float) -> _FakeResponse:
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(writingprompts, "_open_url", refuse)
    message = _one_line_error(lambda: load_writingprompts({}, tmp_path), DataNotFoundError)
    assert "Name or service not known" in message


def test_writingprompts_no_download_for_the_jsonl_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")
    monkeypatch.setattr(writingprompts, "_open_url", lambda url, timeout: pytest.fail("must not download"))
    message = _one_line_error(lambda: load_writingprompts({"format": "jsonl"}, tmp_path), DataNotFoundError)
    assert str(tmp_path / "writingprompts" / "test.wp_source") not in message and "HARNESS_OFFLINE" not in message


def test_writingprompts_real_data_if_present() -> None:
    """Not run on this project's machines (the release is not there); kept for machines that have it."""
    folder = REAL / "writingprompts"
    candidates = [folder, folder / "writingPrompts", REAL / "writingPrompts"]
    if not any((c / "test.wp_source").is_file() and (c / "test.wp_target").is_file() for c in candidates):
        pytest.skip(f"the WritingPrompts release is not under {REAL} (see {folder / 'SOURCE.md'})")
    data = load_writingprompts({}, REAL)
    instances = _gen(data)
    assert data.source["n_pairs"] == 15138  # the test split's pairs, per the provenance notes
    assert instances and all(len(i.references) >= 5 for i in instances)
    ids = [int(i.id) for i in instances]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
