"""The pragmatics multiple-choice loader (Hu et al., 2023 items and human choices; Tsvilodub et al., 2024 prompts).

It is checked on a small hand-made fixture in the official release's exact format (``tests/fixtures/pragmatics-mcq``,
so ``tests/fixtures`` is its data root), with the expected instances written out by hand: it has CRLF files, a
CR-only file, quoted cells with doubled quotes, a Maxims file without the task-code column and with a CR inside a
quoted cell, the CoherenceInference items (no options file) and the Irony item 16 label quirk. Its derived
``pragmatics_items_human_counts.jsonl`` holds the same items in the real JSONL's schema (records out of order), so
the fixture checks the JSONL reader, not the agreement of the two formats. On the real data
under ``HARNESS_DATA_DIR`` (default ``../shared/data``), where it is present, it is checked against the counts in
the provenance notes, against the two derived tables and Tsvilodub et al.'s proportions, which were made
independently of this loader, and for identical instances from the official and derived formats.
"""

from __future__ import annotations

import csv
import email.message
import io
import shutil
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.data.loaders import LoadedData, hash_files
from harness.errors import DataNotFoundError, HarnessError
from harness.instances import ChoiceInstance
from harness.plugins.loaders import pragmatics
from harness.plugins.loaders.pragmatics import load_pragmatics_mcq
from harness.registry.manager import get_registry
from tests.helpers import shared_data_dir

FIXTURES = Path(__file__).parent / "fixtures"
FIX = FIXTURES / "pragmatics-mcq"
RAW = Path("hu2023/fj_raw_data")
HUMAN = Path("hu2023/human_data/fj")
PROMPTS = Path("tsvilodub2024/prompt/prompts")
FIX_PHENOMENA = ["CoherenceInference", "Irony", "Maxims"]
REAL = shared_data_dir()
REAL_ROOT = REAL / "pragmatics-mcq"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach the network: downloads are off, and the download tests replace the opener explicitly."""
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    monkeypatch.setattr(pragmatics, "_open_url", lambda url, timeout: pytest.fail(f"network access: {url}"))


def _choice(data: LoadedData) -> list[ChoiceInstance]:
    out = []
    for instance in data.instances:
        assert isinstance(instance, ChoiceInstance)
        out.append(instance)
    return out


def _one_line_error(call: Callable[[], Any], error: type[HarnessError] = HarnessError) -> str:
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    return message


def _copy(tmp_path: Path) -> Path:
    """A writable data root holding a copy of the fixture."""
    dest = tmp_path / "data"
    shutil.copytree(FIX, dest / "pragmatics-mcq")
    return dest


def test_the_loader_is_registered() -> None:
    assert get_registry().loader("pragmatics_mcq") is load_pragmatics_mcq


# ================================================================================================== fixture

TSV_COHERENCE = "You will read a pair of sentences. Your task is to decide whether they form a coherent story."
TSV_STORY = (
    "You will read a short story that describes an everyday situation. Your task is to interpret what the "
    "character in the story is trying to convey."
)
HU_COHERENCE = (
    "Task: You will read pairs of sentences. Reach each pair and decide whether they form a coherent story. "
    "The answer options are 1 or 2."
)
HU_STORIES = (
    "Task: You will read short stories that describe everyday situations. Each story will be followed by a "
    "multiple-choice question. Read each story and choose the best answer. Your task is to decide {} "
    "The answer options are 1, 2, 3, or 4."
)
HU_IRONY = HU_STORIES.format("what the character in the story is trying to convey.")
HU_MAXIMS = HU_STORIES.format("why the character in the story responds in a certain way.")

# Checked by hand against the files under tests/fixtures/pragmatics-mcq/hu2023 (5 participants answered every item).
FIX_EXPECTED = [
    ChoiceInstance(
        id="CoherenceInference-1",
        phenomenon="CoherenceInference",
        item_id=1,
        description=TSV_COHERENCE,
        scenario="Mary's exam was about to start. Her palms were sweaty.",  # the cell ends in a space
        options=("Coherent", "Incoherent"),
        option_types=("Correct", "IncorrectIncoherent"),
        target=0,
        human_counts=(4, 1),
        meta={"task_code": "CIV", "label_simple": ["Correct", "Incorrect"], "human_n": 5},
    ),
    ChoiceInstance(
        id="CoherenceInference-21",  # second although its key row comes first
        phenomenon="CoherenceInference",
        item_id=21,
        description=TSV_COHERENCE,
        scenario="Mary's exam was about to start. Some friends had remembered her birthday.",
        options=("Coherent", "Incoherent"),
        option_types=("IncorrectCoherent", "Correct"),
        target=1,
        human_counts=(2, 3),
        meta={"task_code": "CIV", "label_simple": ["Incorrect", "Correct"], "human_n": 5},
    ),
    ChoiceInstance(
        id="Irony-1",
        phenomenon="Irony",
        item_id=1,
        description=TSV_STORY,
        scenario=(
            'In a shop, Lara tries on a dress. The dress is far too long for her. Lara asks Simon: "Does this dress '
            'fit me?" Simon answers: "Wow! It\'s clearly the perfect length for you." What did Simon want to convey?'
        ),
        options=(
            "The dress is fitting well.",
            "Lara needs to get a dress of a shorter length.",
            "Simon does not like the color of this dress.",
            "Simon has to get back to work.",
        ),
        option_types=("IncorrectLiteral", "CorrectNonLiteral", "IncorrectAssociate", "IncorrectNonSequitur"),
        target=1,
        human_counts=(1, 3, 0, 1),
        meta={"task_code": "IV", "label_simple": ["Incorrect", "Correct", "Incorrect", "Incorrect"], "human_n": 5},
    ),
    ChoiceInstance(
        id="Irony-2",
        phenomenon="Irony",
        item_id=2,
        description=TSV_STORY,
        scenario=(
            "Christian explains the homework to Shane. Shane does not follow the instructions. Christian says, "
            '"You are such a wonderful listener." What did Christian want to convey?'
        ),
        options=(
            "Shane was paying attention when Christian was talking.",
            "Shane was not paying attention.",  # the cell ends in a space
            "Christian likes to help with homework.",
            "Shane needs a new pencil.",
        ),
        option_types=("IncorrectLiteral", "CorrectNonLiteral", "IncorrectAssociate", "IncorrectNonSequitur"),
        target=1,
        human_counts=(0, 5, 0, 0),
        meta={"task_code": "IV", "label_simple": ["Incorrect", "Correct", "Incorrect", "Incorrect"], "human_n": 5},
    ),
    ChoiceInstance(
        id="Irony-16",
        phenomenon="Irony",
        item_id=16,
        description=TSV_STORY,
        # the HTML entity and the double space are in the release too, and kept
        scenario=(
            'Laura and Lynn were having coffee at a local caf&eacute;. Lynn said, "That sounds so exciting."  '
            "What did Lynn want to convey?"
        ),
        options=(
            "Laura had a thrilling experience.",
            "Laura had a dull experience.",
            "Laura got food poisoning.",
            "Laura needs a babysitter.",
        ),
        # the release types option 4 like option 3 (see SOURCE.md); the source label is kept
        option_types=("IncorrectLiteral", "CorrectNonLiteral", "IncorrectAssociate", "IncorrectAssociate"),
        target=1,
        human_counts=(1, 4, 0, 0),
        meta={"task_code": "IV", "label_simple": ["Incorrect", "Correct", "Incorrect", "Incorrect"], "human_n": 5},
    ),
    ChoiceInstance(
        id="Maxims-1",
        phenomenon="Maxims",
        item_id=1,
        description=TSV_STORY,
        scenario=(  # the quoted cell ends in a CR
            'Mr. James asks Bob: "Did you like my presentation?" Bob responds: "I cannot wait for our trip to Japan."'
            " Why has Bob responded like this?"
        ),
        options=(
            "He is excited about the trip to Japan.",
            "He liked the talk but does not want to say so.",
            "He disliked the talk but does not want to criticize his boss.",
            "He wants to avoid going to Japan.",
        ),
        # the complex key lists options 3, 2, 4, 1
        option_types=("IncorrectLiteral", "IncorrectNonLiteral", "CorrectNonLiteral", "IncorrectAssociate"),
        target=2,
        human_counts=(1, 1, 3, 0),
        meta={
            "task_code": "MV",
            "maxim": "RelevanceMaxim",
            "label_simple": ["Incorrect", "Incorrect", "Correct", "Incorrect"],
            "human_n": 5,
        },
    ),
    ChoiceInstance(
        id="Maxims-13",  # kept, although both papers' prompts drop the real item 13
        phenomenon="Maxims",
        item_id=13,
        description=TSV_STORY,
        scenario=(
            'Paul was asked to comment on the singer. He said: "She produced a series of sounds." '
            "Why has Paul responded like this?"
        ),
        options=(
            "Paul was impressed by the singer.",
            "Paul thinks that the singer cannot sing.",
            "Paul thinks that the singer has a sore throat.",
            "Paul was moved by the performance.",
        ),
        option_types=("IncorrectLiteral", "CorrectNonLiteral", "IncorrectAssociate", "IncorrectNonLiteral"),
        target=1,
        human_counts=(2, 2, 0, 1),
        meta={
            "task_code": "MV",
            "maxim": "MannerMaxim",
            "label_simple": ["Incorrect", "Correct", "Incorrect", "Incorrect"],
            "human_n": 5,
        },
    ),
]


def _fixture_files(descriptions: str) -> list[Path]:
    """Every file the hu format reads from the fixture, and no other."""
    files = [FIX / RAW / f"CoherenceInference{kind}.txt" for kind in ("Scenarios", "KeySimple")]
    for phenomenon in ("Irony", "Maxims"):
        files += [FIX / RAW / f"{phenomenon}{k}.txt" for k in ("Scenarios", "KeySimple", "Options", "KeyComplex")]
    files += [FIX / HUMAN / f"Human_{p}.csv" for p in FIX_PHENOMENA]
    if descriptions == "hu":
        files += [FIX / RAW / f"{p}Instructions.txt" for p in FIX_PHENOMENA]
    else:
        files += [FIX / PROMPTS / f"{name}_instructions_FC.txt" for name in ("coherence", "irony", "maxims")]
    return files


def test_fixture_hu_format_gives_the_hand_checked_instances() -> None:
    data = load_pragmatics_mcq({"phenomena": FIX_PHENOMENA}, FIXTURES)
    assert _choice(data) == FIX_EXPECTED
    assert data.source == {
        "dataset": "pragmatics-mcq",
        "path": str(FIX),
        "format": "hu",
        "descriptions": "tsvilodub",
        "phenomena": FIX_PHENOMENA,
        "n_files": 16,
        "n_items": 7,
        "human_n": 5,
    }
    assert data.data_hash == hash_files(_fixture_files("tsvilodub"))
    # the order of the requested phenomena does not change the instance order
    assert load_pragmatics_mcq({"phenomena": FIX_PHENOMENA[::-1], "format": "hu"}, FIXTURES).instances == FIX_EXPECTED


def test_fixture_hu_descriptions_are_the_participants_instructions() -> None:
    data = load_pragmatics_mcq({"phenomena": FIX_PHENOMENA, "descriptions": "hu"}, FIXTURES)
    expected = {"CoherenceInference": HU_COHERENCE, "Irony": HU_IRONY, "Maxims": HU_MAXIMS}
    assert [i.description for i in _choice(data)] == [expected[i.phenomenon] for i in FIX_EXPECTED]
    assert [i.scenario for i in _choice(data)] == [i.scenario for i in FIX_EXPECTED]
    assert data.data_hash == hash_files(_fixture_files("hu"))


def test_fixture_jsonl_gives_the_same_instances() -> None:
    for descriptions in ("tsvilodub", "hu"):
        options = {"phenomena": FIX_PHENOMENA, "descriptions": descriptions}
        official = load_pragmatics_mcq({**options, "format": "hu"}, FIXTURES)
        derived = load_pragmatics_mcq({**options, "format": "jsonl"}, FIXTURES)
        assert derived.instances == official.instances  # the JSONL lists Maxims first; order is restored
        assert derived.source["format"] == "jsonl"
        assert derived.data_hash != official.data_hash
    derived = load_pragmatics_mcq({"phenomena": FIX_PHENOMENA, "format": "jsonl"}, FIXTURES)
    assert _choice(derived) == FIX_EXPECTED
    jsonl = FIX / "pragmatics_items_human_counts.jsonl"
    assert derived.data_hash == hash_files([jsonl, *_fixture_files("tsvilodub")[-3:]])


def test_fixture_phenomena_restricts_the_items() -> None:
    data = load_pragmatics_mcq({"phenomena": ["Maxims"]}, FIXTURES)
    assert _choice(data) == FIX_EXPECTED[-2:]
    assert data.source["n_files"] == 6  # 4 item files, the human data and one description


def test_auto_falls_back_to_the_jsonl(tmp_path: Path) -> None:
    data_dir = _copy(tmp_path)
    shutil.rmtree(data_dir / "pragmatics-mcq" / "hu2023")
    data = load_pragmatics_mcq({"phenomena": FIX_PHENOMENA}, data_dir)
    assert data.source["format"] == "jsonl"
    assert data.instances == FIX_EXPECTED
    # an absolute path is used as it is
    absolute = load_pragmatics_mcq({"phenomena": FIX_PHENOMENA, "path": str(data_dir / "pragmatics-mcq")}, tmp_path)
    assert absolute.instances == FIX_EXPECTED


def test_missing_directory_names_where_it_looked(tmp_path: Path) -> None:
    message = _one_line_error(lambda: load_pragmatics_mcq({}, tmp_path), DataNotFoundError)
    assert f"not found in {tmp_path / 'pragmatics-mcq'}/: looked for hu2023/fj_raw_data/" in message
    assert "pragmatics_items_human_counts.jsonl" in message
    assert "--data-dir DIR" in message and "https://github.com/jennhu/lm-pragmatics" in message
    message = _one_line_error(lambda: load_pragmatics_mcq({"format": "jsonl"}, tmp_path), DataNotFoundError)
    assert "looked for hu2023" not in message  # a named format looks only for its own files
    assert f"{tmp_path / 'pragmatics-mcq'}/: looked for pragmatics_items_human_counts.jsonl" in message


def test_a_phenomenon_without_its_files_is_not_found() -> None:
    # the fixture has no Humour files: the default (all seven phenomena) must not silently load fewer
    message = _one_line_error(lambda: load_pragmatics_mcq({}, FIXTURES), DataNotFoundError)
    assert str(RAW / "DeceitsScenarios.txt") in message and "more" in message
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": ["Humour"], "format": "jsonl"}, FIXTURES))
    assert message == f"{FIX / 'pragmatics_items_human_counts.jsonl'}: no items for Humour"


def test_missing_tsvilodub_description_suggests_the_hu_descriptions(tmp_path: Path) -> None:
    data_dir = _copy(tmp_path)
    path = data_dir / "pragmatics-mcq" / PROMPTS / "irony_instructions_FC.txt"
    path.unlink()
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": ["Irony"]}, data_dir), DataNotFoundError)
    assert str(path) in message and "descriptions: hu" in message
    data = load_pragmatics_mcq({"phenomena": ["Irony"], "descriptions": "hu"}, data_dir)
    assert {i.description for i in _choice(data)} == {HU_IRONY}


def test_an_item_with_no_correct_option_is_an_error(tmp_path: Path) -> None:
    data_dir = _copy(tmp_path)
    path = data_dir / "pragmatics-mcq" / RAW / "IronyKeySimple.txt"
    path.write_bytes(path.read_bytes().replace(b"IV\t2\t2\tCorrect", b"IV\t2\t2\tIncorrect"))
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": ["Irony"]}, data_dir))
    assert message == f"{path}: item 2: 0 Correct options, expected exactly one"


def test_jsonl_item_with_no_correct_option_is_an_error(tmp_path: Path) -> None:
    data_dir = _copy(tmp_path)
    path = data_dir / "pragmatics-mcq" / "pragmatics_items_human_counts.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"item_id": 13' in lines[1]
    lines[1] = lines[1].replace('"label_simple": "Correct"', '"label_simple": "Incorrect"')
    path.write_text("".join(lines), encoding="utf-8")
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": ["Maxims"], "format": "jsonl"}, data_dir))
    assert message == f"{path}: line 2: Maxims item 13: 0 Correct options, expected exactly one"


def test_unequal_jsonl_totals_name_the_line(tmp_path: Path) -> None:
    data_dir = _copy(tmp_path)
    path = data_dir / "pragmatics-mcq" / "pragmatics_items_human_counts.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"item_id": 13' in lines[1] and '"human_count": 0' in lines[1] and '"human_n": 5' in lines[1]
    lines[1] = lines[1].replace('"human_count": 0', '"human_count": 1').replace('"human_n": 5', '"human_n": 6')
    path.write_text("".join(lines), encoding="utf-8")
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": ["Maxims"], "format": "jsonl"}, data_dir))
    assert message == f"{path}: line 2: Maxims item 13: 6 human responses, expected 5 like Maxims item 1"
    lines[1] = lines[1].replace('"human_n": 6', '"human_n": 5')
    path.write_text("".join(lines), encoding="utf-8")
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": ["Maxims"], "format": "jsonl"}, data_dir))
    assert message == f"{path}: line 2: Maxims item 13: field 'human_n': 5, but the counts sum to 6"


def test_unequal_human_totals_name_the_file_and_item(tmp_path: Path) -> None:
    data_dir = _copy(tmp_path)
    path = data_dir / "pragmatics-mcq" / HUMAN / "Human_Maxims.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert ",13," in lines[-1]
    path.write_text("".join(lines[:-1]), encoding="utf-8")  # one trial of item 13 lost
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": FIX_PHENOMENA}, data_dir))
    assert message == f"{path}: Maxims item 13: 4 human responses, expected 5 like CoherenceInference item 1"


# Lines 2-4 of IronyKeyComplex.txt from the label of item 1 option 2 on: quoting this span makes one runaway cell.
IRONY_1_LAST_LABELS = b"\tCorrectNonLiteral\r\nIV\t1\t3\tIncorrectAssociate\r\nIV\t1\t4\tIncorrectNonSequitur\r"


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        ("IronyOptions.txt", b"IV\t16\t4\tLaura needs a babysitter.\r\n", b"", "item 16: option numbers [1, 2, 3]"),
        ("IronyOptions.txt", b"IV\t2\t1\tShane", b"IV\t2\tShane", "line 2: 3 tab-separated cells, expected 4"),
        ("IronyKeyComplex.txt", b"IV\t2\t", b"DV\t2\t", "line 5: task code 'DV', expected 'IV' for Irony"),
        ("IronyKeySimple.txt", b"IV\t16\t4\tIncorrect", b"IV\t16\t4\tCorrect", "item 16: 2 Correct options"),
        ("MaximsKeyComplex.txt", b"MV\t13\t3\tIncorrectAssociate\tMannerMaxim", b"MV\t13\t3\tX\tQualityMaxim",
         "item 13: maxims ['MannerMaxim', 'QualityMaxim'], expected one"),
        ("MaximsOptions.txt", b"13\t1\t", b"13\t1\t \t", "line 2: 4 tab-separated cells, expected 3"),
        ("CoherenceInferenceKeySimple.txt", b"Incoherent", b"incoherent", "line 1: item 21: key 'incoherent'"),
        ("IronyScenarios.txt", b'convey?"\r\n', b"convey?\r\n", "line 3: not readable as tab-separated cells"),
        ("IronyScenarios.txt", b'for you."" What', b'for you."" What"', "line 1: not readable as tab-separated"),
        ("IronyKeyComplex.txt", IRONY_1_LAST_LABELS, b'\t"' + IRONY_1_LAST_LABELS[1:-1] + b'"\r',
         "line 4: a line break inside the label cell (an unclosed quote?)"),  # the quote closes on line 4
    ],
)  # fmt: skip
def test_malformed_item_files_name_the_file(tmp_path: Path, file: str, old: bytes, new: bytes, expected: str) -> None:
    data_dir = _copy(tmp_path)
    path = data_dir / "pragmatics-mcq" / RAW / file
    content = path.read_bytes()
    assert old in content
    path.write_bytes(content.replace(old, new, 1))
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": FIX_PHENOMENA}, data_dir))
    assert message.startswith(f"{path}: {expected}"), message


def test_unknown_human_choice_names_the_line(tmp_path: Path) -> None:
    data_dir = _copy(tmp_path)
    path = data_dir / "pragmatics-mcq" / HUMAN / "Human_Irony.csv"
    path.write_text(path.read_text(encoding="utf-8").replace('"Answer4"', '"Answer5"', 1), encoding="utf-8")
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": ["Irony"]}, data_dir))
    assert message.startswith(f"{path}: line ") and "OptionChosen 'Answer5'" in message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"phenomena": ["Irony", "Humor"]}, "option 'phenomena': unknown phenomenon 'Humor'; known: Coherence"),
        ({"phenomena": "Irony"}, "option 'phenomena': expected a non-empty list of names"),
        ({"phenomena": []}, "option 'phenomena': expected a non-empty list of names, got []"),
        ({"format": "csv"}, "option 'format': expected one of 'auto', 'hu', 'jsonl', got 'csv'"),
        ({"descriptions": "paper"}, "option 'descriptions': expected one of 'tsvilodub', 'hu', got 'paper'"),
        ({"split": "test"}, "unknown option 'split' (accepted: descriptions, format, path, phenomena)"),
    ],
)
def test_bad_options(options: dict[str, Any], message: str) -> None:
    error = _one_line_error(lambda: load_pragmatics_mcq(options, FIXTURES))
    assert error.startswith("data options of loader 'pragmatics_mcq': ") and message in error, error


# ================================================================================================= download

# Written out rather than taken from the module, so that a wrong repository or commit there fails here.
HU_RAW = "https://raw.githubusercontent.com/jennhu/lm-pragmatics/9fd4be5c0e43162c9d6e09b6024cc000e40b3398/"
TSV_RAW = "https://raw.githubusercontent.com/polina-tsvilodub/LLM_link/2cfc65228c5c8f9d8d4f6660d68b1c7487b4b773/"
HU_TREE = "https://github.com/jennhu/lm-pragmatics/tree/9fd4be5c0e43162c9d6e09b6024cc000e40b3398"
TSV_TREE = "https://github.com/polina-tsvilodub/LLM_link/tree/2cfc65228c5c8f9d8d4f6660d68b1c7487b4b773"


def _url(local: Path) -> str:
    """The URL a file of the fixture's layout has in its repository: the local release folder names the repository."""
    release, *inside = local.relative_to(FIX).parts
    return {"hu2023": HU_RAW, "tsvilodub2024": TSV_RAW}[release] + "/".join(inside)


class _Server:
    """Serves the fixture's release files by URL in place of GitHub, and records what was asked for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, delay_s: float = 0.0) -> None:
        monkeypatch.delenv("HARNESS_OFFLINE")
        monkeypatch.setattr(pragmatics, "_open_url", self.open)
        self.files = {_url(p): p.read_bytes() for p in FIX.rglob("*") if p.is_file() and p.parent != FIX}
        self.errors: dict[str, OSError] = {}
        self.calls: list[str] = []
        self.delay_s = delay_s

    def open(self, url: str, timeout: float) -> io.BytesIO:
        self.calls.append(url)
        assert timeout == pragmatics.DOWNLOAD_TIMEOUT_S
        time.sleep(self.delay_s)
        if url in self.errors:
            raise self.errors[url]
        if url not in self.files:
            raise urllib.error.HTTPError(url, 404, "Not Found", email.message.Message(), None)
        return io.BytesIO(self.files[url])


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (hidden temporary ones included) by relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("descriptions", ["tsvilodub", "hu"])
def test_download_fetches_exactly_the_files_read_at_the_pinned_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, descriptions: str
) -> None:
    server = _Server(monkeypatch)
    options = {"phenomena": FIX_PHENOMENA, "descriptions": descriptions}
    data = load_pragmatics_mcq(options, tmp_path)
    read = _fixture_files(descriptions)
    assert sorted(server.calls) == sorted(_url(p) for p in read) and len(set(server.calls)) == len(server.calls)
    assert all(url.startswith((HU_RAW, TSV_RAW)) for url in server.calls)

    direct = load_pragmatics_mcq(options, FIXTURES)
    root = tmp_path / "pragmatics-mcq"
    assert data.instances == direct.instances
    assert data.data_hash == direct.data_hash
    trees = [HU_TREE, TSV_TREE] if descriptions == "tsvilodub" else [HU_TREE]
    assert data.source == {**direct.source, "path": str(root), "downloaded_from": trees}
    # the release's layout, byte for byte, and nothing else (no temporary files)
    assert _tree(root) == {p.relative_to(FIX).as_posix(): p.read_bytes() for p in read}

    again = load_pragmatics_mcq(options, tmp_path)  # now read, not fetched again
    assert len(server.calls) == len(read)
    assert again.instances == direct.instances and "downloaded_from" not in again.source


def test_download_fetches_only_the_missing_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = _copy(tmp_path)
    root = data_dir / "pragmatics-mcq"
    (root / RAW / "IronyOptions.txt").unlink()
    (root / PROMPTS / "irony_instructions_FC.txt").unlink()
    server = _Server(monkeypatch)
    data = load_pragmatics_mcq({"phenomena": ["Irony"], "format": "hu"}, data_dir)
    assert server.calls == [
        HU_RAW + "fj_raw_data/IronyOptions.txt",
        TSV_RAW + "prompt/prompts/irony_instructions_FC.txt",
    ]
    assert data.source["downloaded_from"] == [HU_TREE, TSV_TREE]
    assert data.instances == load_pragmatics_mcq({"phenomena": ["Irony"]}, FIXTURES).instances

    (root / PROMPTS / "maxims_instructions_FC.txt").unlink()  # only a description missing: only it is fetched
    data = load_pragmatics_mcq({"phenomena": ["Maxims"]}, data_dir)
    assert server.calls[2:] == [TSV_RAW + "prompt/prompts/maxims_instructions_FC.txt"]
    assert data.source["downloaded_from"] == [TSV_TREE]


def test_no_download_when_the_files_are_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE")  # the autouse opener fails the test if it is called
    for fmt in ("auto", "hu"):
        data = load_pragmatics_mcq({"phenomena": FIX_PHENOMENA, "format": fmt}, FIXTURES)
        assert data.instances == FIX_EXPECTED and "downloaded_from" not in data.source
    # auto prefers a local derived copy to the network
    data_dir = _copy(tmp_path)
    shutil.rmtree(data_dir / "pragmatics-mcq" / "hu2023")
    data = load_pragmatics_mcq({"phenomena": FIX_PHENOMENA}, data_dir)
    assert data.source["format"] == "jsonl" and "downloaded_from" not in data.source
    # the derived format is never downloaded
    message = _one_line_error(lambda: load_pragmatics_mcq({"format": "jsonl"}, tmp_path / "empty"), DataNotFoundError)
    assert "Download" not in message and "HARNESS_OFFLINE" not in message


def test_no_download_when_downloads_are_off(tmp_path: Path) -> None:
    for fmt in ("auto", "hu"):
        with pytest.raises(DataNotFoundError) as info:
            load_pragmatics_mcq({"format": fmt}, tmp_path)
        message = str(info.value)
        assert "\n" not in message and message.endswith(" Downloads are off (HARNESS_OFFLINE is set).")
        assert f"{tmp_path / 'pragmatics-mcq'}/: looked for hu2023/fj_raw_data/" in message
    assert list(tmp_path.iterdir()) == []
    data_dir = _copy(tmp_path)
    (data_dir / "pragmatics-mcq" / PROMPTS / "irony_instructions_FC.txt").unlink()
    message = _one_line_error(lambda: load_pragmatics_mcq({"phenomena": ["Irony"]}, data_dir), DataNotFoundError)
    assert "descriptions: hu" in message and message.endswith(" Downloads are off (HARNESS_OFFLINE is set).")


FAILING = HU_RAW + "fj_raw_data/MaximsOptions.txt"


@pytest.mark.parametrize("failure", ["network", "not-found", "too-large", "deadline"])
def test_failed_download_leaves_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    server = _Server(monkeypatch, delay_s=0.4 if failure == "deadline" else 0.0)
    if failure == "network":
        server.errors[FAILING] = urllib.error.URLError("Name or service not known")
        reason = f"Downloading {FAILING} failed (<urlopen error Name or service not known>)."
    elif failure == "not-found":
        del server.files[FAILING]
        reason = f"Downloading {FAILING} failed (HTTP Error 404: Not Found)."
    elif failure == "too-large":
        monkeypatch.setattr(pragmatics, "DOWNLOAD_MAX_BYTES", 1000)
        server.files[FAILING] = b"x" * 1001
        reason = f"Downloading {FAILING} failed (more than 1000 bytes, not MaximsOptions.txt of the release)."
    else:
        # the deadline covers all files together: each one alone is well within it
        monkeypatch.setattr(pragmatics, "DOWNLOAD_DEADLINE_S", 1.0)
        reason = "failed (took longer than 1 s)."
    options = {"phenomena": FIX_PHENOMENA}
    message = _one_line_error(lambda: load_pragmatics_mcq(options, tmp_path), DataNotFoundError)
    assert message.startswith("pragmatics-mcq data (format auto) not found") and message.endswith(reason)
    assert 1 < len(server.calls) < len(_fixture_files("tsvilodub"))  # some files had arrived before the failure
    assert list(tmp_path.iterdir()) == []  # all or nothing: no file, no temporary file, no empty folder

    # a local copy lacking files is left exactly as it was
    data_dir = _copy(tmp_path)
    root = data_dir / "pragmatics-mcq"
    for name in ("IronyOptions.txt", "MaximsOptions.txt"):
        (root / RAW / name).unlink()
    before = _tree(root)
    server.delay_s *= 1.5  # two files: the second one overruns the deadline
    message = _one_line_error(lambda: load_pragmatics_mcq(options, data_dir), DataNotFoundError)
    assert message.startswith(f"pragmatics-mcq data (format hu) incomplete under {root}") and message.endswith(reason)
    assert _tree(root) == before


def test_the_pinned_commits_are_those_of_the_provenance_notes() -> None:
    notes = REAL_ROOT / "SOURCE.md"
    if not notes.is_file():
        pytest.skip(f"no provenance notes at {notes}")
    text = notes.read_text(encoding="utf-8")
    for repo, commit in pragmatics.RELEASES.values():
        assert f"`{repo}`" in text and f"`{commit}`" in text


# ================================================================================================ real data

PHENOMENON_COUNTS = {
    "CoherenceInference": 40,
    "Deceits": 20,
    "Humour": 25,
    "IndirectSpeech": 20,
    "Irony": 25,
    "Maxims": 20,
    "Metaphor": 20,
}


@pytest.fixture(scope="module")
def real() -> dict[str, LoadedData]:
    """The real data in both formats (with both kinds of descriptions), loaded once."""
    if not (REAL_ROOT / RAW).is_dir() or not (REAL_ROOT / "pragmatics_items_human_counts.jsonl").is_file():
        pytest.skip(f"pragmatics-mcq data not found under {REAL}")
    return {
        f"{fmt}-{descriptions}": load_pragmatics_mcq({"format": fmt, "descriptions": descriptions}, REAL)
        for fmt in ("hu", "jsonl")
        for descriptions in ("tsvilodub", "hu")
    }


def _real_by_id(real: dict[str, LoadedData]) -> dict[str, ChoiceInstance]:
    return {i.id: i for i in _choice(real["hu-tsvilodub"])}


def test_real_counts_and_order(real: dict[str, LoadedData]) -> None:
    instances = _choice(real["hu-tsvilodub"])
    assert len(instances) == 170
    counts: dict[str, int] = {}
    for instance in instances:
        counts[instance.phenomenon] = counts.get(instance.phenomenon, 0) + 1
    assert counts == PHENOMENON_COUNTS
    assert list(counts) == list(PHENOMENON_COUNTS)  # phenomena in instance order
    keys = [(list(PHENOMENON_COUNTS).index(i.phenomenon), i.item_id) for i in instances]
    assert keys == sorted(keys)
    assert "Maxims-13" in {i.id for i in instances}  # kept: the human data have it
    options_per_item = {"CoherenceInference": 2, "Humour": 5, "Metaphor": 5}
    assert all(len(i.options) == options_per_item.get(i.phenomenon, 4) for i in instances)
    assert all(sum(i.human_counts) == 374 == i.meta["human_n"] for i in instances)
    # 6 x 4 item files + 2 of CoherenceInference + 7 trial files + 7 descriptions (Tsvilodub's or the Instructions)
    assert real["hu-tsvilodub"].source["n_files"] == 40 and real["hu-hu"].source["n_files"] == 40
    assert real["jsonl-tsvilodub"].source["n_files"] == 8 and real["jsonl-hu"].source["n_files"] == 1
    assert real["hu-tsvilodub"].source["human_n"] == 374


def test_real_official_and_derived_formats_agree(real: dict[str, LoadedData]) -> None:
    assert real["hu-tsvilodub"].instances == real["jsonl-tsvilodub"].instances
    assert real["hu-hu"].instances == real["jsonl-hu"].instances
    assert real["hu-tsvilodub"].data_hash != real["jsonl-tsvilodub"].data_hash


def test_real_irony_item_1_as_in_the_provenance_notes(real: dict[str, LoadedData]) -> None:
    irony = _real_by_id(real)["Irony-1"]
    assert irony.human_counts == (83, 286, 2, 3)
    assert irony.target == 1
    assert irony.options[:2] == ("The dress is fitting well.", "Lara needs to get a dress of a shorter length.")
    assert irony.options[2:] == ("Simon does not like the color of this dress.", "Simon has to get back to work.")
    assert irony.option_types == ("IncorrectLiteral", "CorrectNonLiteral", "IncorrectAssociate", "IncorrectNonSequitur")
    assert irony.scenario.startswith("In a shop, Lara tries on a dress. ")
    assert irony.scenario.endswith("What did Simon want to convey?")
    assert irony.meta == {
        "task_code": "IV",
        "label_simple": ["Incorrect", "Correct", "Incorrect", "Incorrect"],
        "human_n": 374,
    }


def test_real_descriptions(real: dict[str, LoadedData]) -> None:
    irony = _real_by_id(real)["Irony-1"]
    expected = (REAL_ROOT / PROMPTS / "irony_instructions_FC.txt").read_text(encoding="utf-8").strip()
    assert irony.description == expected
    assert irony.description.startswith("You will read a short story that describes an everyday situation.")
    by_id = {i.id: i for i in _choice(real["hu-hu"])}
    participants = (REAL_ROOT / RAW / "IronyInstructions.txt").read_text(encoding="utf-8").strip()
    assert by_id["Irony-1"].description == participants
    assert participants.startswith("Task: You will read short stories") and participants.endswith("3, or 4.")


def test_real_counts_equal_the_derived_option_table(real: dict[str, LoadedData]) -> None:
    by_id = _real_by_id(real)
    with (REAL_ROOT / "pragmatics_human_option_counts.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    # 645 rows, one per (item, option): SOURCE.md says 644, but 40x2 + 20x4 + 25x5 + 20x4 + 25x4 + 20x4 + 20x5 = 645
    assert len(rows) == 645 == sum(len(i.options) for i in by_id.values())
    seen = set()
    for row in rows:
        instance = by_id[f"{row['phenomenon']}-{row['item_id']}"]
        k = int(row["option_num"]) - 1
        seen.add((instance.id, k))
        assert instance.human_counts[k] == int(row["human_count"]), row
        assert instance.options[k] == row["option_text"], row
        assert instance.option_types[k] == row["label_complex"], row
        assert instance.meta["label_simple"][k] == row["label_simple"], row
        assert instance.meta["task_code"] == row["task_code"] and instance.meta["human_n"] == int(row["human_n"])
    assert len(seen) == 645


def test_real_proportions_agree_with_tsvilodub(real: dict[str, LoadedData]) -> None:
    by_id = _real_by_id(real)
    path = REAL_ROOT / "tsvilodub2024" / "data" / "human_results" / "human_response_proportions.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    names = {"Humor": "Humour"}  # the table's other names are the data's; it has no CoherenceInference rows
    matched: set[tuple[str, int]] = set()
    for row in rows:
        instance = by_id[f"{names.get(row['phenomenon'], row['phenomenon'])}-{row['item_id']}"]
        label = row["answer_label_complex"]
        if instance.id == "Irony-16" and label in ("IncorrectAssociate", "IncorrectNonSequitur"):
            # IronyKeyComplex.txt types options 3 and 4 of item 16 both IncorrectAssociate; the table calls
            # option 4 IncorrectNonSequitur (SOURCE.md, "Known quirk"), so the label names one option only here.
            k = 2 if label == "IncorrectAssociate" else 3
        else:
            (k,) = [k for k, t in enumerate(instance.option_types) if t == label]
        matched.add((instance.id, k))
        assert instance.human_counts[k] / sum(instance.human_counts) == pytest.approx(float(row["prob"]), abs=1e-6)
    # every option of the 129 items in the table once; Maxims item 13 and CoherenceInference are not in it
    expected = {
        (i.id, k) for i in by_id.values() if i.phenomenon != "CoherenceInference" for k in range(len(i.options))
    }
    assert matched == expected - {("Maxims-13", k) for k in range(4)}
    assert len(rows) == len(matched) == 561
    assert by_id["Irony-16"].option_types[2:] == ("IncorrectAssociate", "IncorrectAssociate")


def test_real_coherence_labels_follow_the_key(real: dict[str, LoadedData]) -> None:
    coherence = [i for i in _real_by_id(real).values() if i.phenomenon == "CoherenceInference"]
    assert all(i.options == ("Coherent", "Incoherent") for i in coherence)
    for instance in coherence:
        wrong = 1 - instance.target
        assert instance.option_types[instance.target] == "Correct"
        assert instance.option_types[wrong] == f"Incorrect{instance.options[wrong]}"
    assert sum(i.target == 0 for i in coherence) == 20  # 20 coherent and 20 incoherent pairs
