"""Data files and loader options: every loader, each file damaged the ways files get damaged (encoding, NUL bytes,
truncation, missing columns, numbers out of range, oversized CSV fields, deep JSON, empty files, a folder where a
file belongs) and each option misspelt or out of range.

Each case copies a small fixture from ``tests/fixtures`` (or writes a tiny file) under ``{tmp}/data``, damages it,
and runs ``harness run --human-only`` on it (loading fails before anything is scored). The data files are
protected: a failing load must not change, delete or add to them.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.malformed.case import Case, Step, copy_fixture, make_dir, replace_bytes, then, write_bytes, yaml_text

DATA = ("--data-dir", "{tmp}/data", "--output-dir", "{tmp}/out")
PROTECT = ("data/**/*",)

#: loader -> (request, scorers) of a task file that reads it.
LOADERS = {
    "provo": ("sample_words", "[tvd]"),
    "asset": ("generate", "[lexical]"),
    "wmt14_multiref": ("generate", "[lexical]"),
    "dailydialog_pp": ("generate", "[lexical]"),
    "writingprompts": ("generate", "[lexical]"),
    "pragmatics_mcq": ("multiple_choice", "[mcq_human]"),
}
PRAGMATICS_FIXTURE = "[CoherenceInference, Irony, Maxims]"


def task_file(loader: str, data: str) -> dict[str, bytes | str]:
    request, scorers = LOADERS[loader]
    fields = {"task": "toy", "version": "1", "loader": loader, "data": data, "request": request, "scorers": scorers}
    return {"task.yaml": yaml_text(fields)}


def run_file() -> tuple[str, ...]:
    return ("run", "--tasks", "{tmp}/task.yaml", "--human-only", *DATA)


def run_task(name: str) -> tuple[str, ...]:
    return ("run", "--tasks", name, "--human-only", *DATA)


def data_case(
    case_id: str,
    expect: str,
    prepare: Step,
    loader: str | None = None,
    data: str = "",
    protect: tuple[str, ...] = PROTECT,
) -> Case:
    """A case reading ``{tmp}/data`` with the registered task (``loader`` None) or a task file of ``loader``."""
    if loader is None:
        argv = run_task(TASK_OF[case_id.split("-")[0]])
        return Case(case_id, argv, expect, prepare=then(prepare), protect=protect)
    return Case(case_id, run_file(), expect, task_file(loader, data), prepare=then(prepare), protect=protect)


TASK_OF = {
    "provo": "provo",
    "asset": "asset-valid",
    "wmt14": "wmt14-en-de",
    "dd": "dailydialog-pp",
    "wp": "writingprompts",
}

# ------------------------------------------------------------------------------------------------- Provo
NORMS = "data/provo/Provo_Corpus-Predictability_Norms.csv"
PROVO = copy_fixture("provo", "data/provo")


def provo(*steps: Step) -> Step:
    return then(PROVO, *steps)


POSITION = {"text_id": 1, "word_num": 2, "context": "The", "target_word": "cat", "human_responses": {"cat": 3}}


def jsonl(*records: object, raw: bytes = b"") -> Step:
    """``provo_positions.jsonl``: a good record, then ``records`` (dicts are dumped, strings written as they are)."""
    lines = [json.dumps(POSITION).encode()]
    for record in records:
        lines.append(record.encode() if isinstance(record, str) else json.dumps(record).encode())
    return write_bytes("data/provo/provo_positions.jsonl", b"\n".join(lines) + b"\n" + raw)


def position(**changes: object) -> dict[str, object]:
    return {**POSITION, "word_num": 3, "context": "The cat", "target_word": "sat", **changes}


JSONL = "{path: provo, format: positions_jsonl}"
LONG = "{path: provo, format: long_csv}"
PASSAGES = write_bytes("data/provo/provo_passages.csv", "text_id,passage\n1,The cat sat\n")
RESPONSES_HEADER = "text_id,word_num,target_word,response,response_count\n"


def responses(rows: str | bytes) -> Step:
    body = rows if isinstance(rows, bytes) else rows.encode()
    return then(PASSAGES, write_bytes("data/provo/provo_cloze_responses.csv", RESPONSES_HEADER.encode() + body))


PROVO_CASES = [
    data_case(
        "provo-official-nul-byte",
        "Provo_Corpus-Predictability_Norms.csv: line 3: NUL byte at byte offset",
        provo(replace_bytes(NORMS, b'"jones"', b'"jo\x00nes"')),
    ),
    data_case(
        "provo-official-field-too-large",
        "Provo_Corpus-Predictability_Norms.csv: line 3: not readable as CSV (field larger than field limit",
        provo(replace_bytes(NORMS, b'"jones"', b'"' + b"x" * 200_000 + b'"')),
    ),
    data_case(
        "provo-official-negative-count",
        "line 3: field 'Response_Count': expected an integer from 0 to 1000000000, got '-2'",
        provo(replace_bytes(NORMS, b'"jones",2,', b'"jones",-2,')),
    ),
    data_case(
        "provo-official-huge-count",
        "line 3: field 'Response_Count': expected an integer",
        provo(replace_bytes(NORMS, b'"jones",2,', b'"jones",1e300,')),
    ),
    data_case(
        "provo-official-5000-digit-count",
        "line 3: field 'Response_Count': expected an integer",
        provo(replace_bytes(NORMS, b'"jones",2,', b'"jones",' + b"9" * 5000 + b",")),
    ),
    data_case(
        "provo-official-text-count",
        "line 3: field 'Response_Count': expected an integer, got 'two'",
        provo(replace_bytes(NORMS, b'"jones",2,', b'"jones",two,')),
    ),
    data_case(
        "provo-official-nan-word-number",
        "field 'Word_Number': expected an integer, got 'nan'",
        provo(replace_bytes(NORMS, b'""",2,1,2,"Smith","jones"', b'""",nan,1,2,"Smith","jones"')),
    ),
    data_case(
        "provo-official-missing-column",
        "line 1: missing column 'Response_Count'",
        provo(replace_bytes(NORMS, b'"Response_Count",', b'"Response_Cnt",')),
    ),
    data_case(
        "provo-official-truncated-row",
        "field 'Response': missing (row too short)",
        provo(
            lambda tmp: (tmp / NORMS).write_bytes(
                (tmp / NORMS).read_bytes() + b'"QID99",2,"Mr. Smith said, ""Go home.""",2'
            )
        ),
    ),
    data_case(
        "provo-official-empty-file", "line 1: missing column 'Text_ID' (columns: none)", provo(write_bytes(NORMS, b""))
    ),
    data_case(
        "provo-official-header-only",
        "found no instances in",
        provo(lambda tmp: (tmp / NORMS).write_bytes((tmp / NORMS).read_bytes().split(b"\n")[0] + b"\n")),
    ),
    data_case(
        "provo-official-word-outside-passage",
        "field 'Word_Number': word 99 is outside the passage's 5 words",
        provo(replace_bytes(NORMS, b'""",5,1,5,', b'""",99,1,5,')),
    ),
    data_case(
        "provo-official-no-human-responses",
        "position 2-5: no human responses",
        provo(replace_bytes(NORMS, b'"home",5,5,1', b"NA,5,5,1")),
    ),
    data_case(
        "provo-official-unclosed-quote",
        "Provo_Corpus-Predictability_Norms.csv: line 3: a line break inside a cell",
        provo(replace_bytes(NORMS, b'"jones",2,', b'"jones,2,')),
    ),
    data_case(
        "provo-official-is-folder",
        "provo/: looked for Provo_Corpus-Predictability_Norms.csv or",
        provo(make_dir(NORMS)),
        protect=(),
    ),
    data_case(
        "provo-path-is-file",
        "Provo_Corpus-Predictability_Norms.csv/: looked for",
        PROVO,
        "provo",
        "{path: provo/Provo_Corpus-Predictability_Norms.csv}",
    ),
    data_case(
        "provo-data-missing", "provo/: looked for Provo_Corpus-Predictability_Norms.csv", make_dir("data"), protect=()
    ),
    data_case(
        "provo-jsonl-not-utf8",
        "provo_positions.jsonl: line 2: not valid UTF-8",
        jsonl(raw=b'{"text_id": 1, "context": "caf\xe9"}\n'),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-bad-json", "provo_positions.jsonl: line 2: not valid JSON", jsonl("{not json"), "provo", JSONL
    ),
    data_case(
        "provo-jsonl-5000-digits",
        "provo_positions.jsonl: line 2: not valid JSON (Exceeds the limit",
        jsonl('{"text_id": ' + "9" * 5000 + "}"),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-deep-nesting",
        "provo_positions.jsonl: line 2: not valid JSON (nested too deeply)",
        jsonl("[" * 100_000 + "]" * 100_000),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-negative-count",
        "line 2: field 'human_responses.sat': expected an integer from 0 to 1000000000, got -3",
        jsonl(position(human_responses={"sat": -3})),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-astronomical-count",
        "field 'human_responses.sat': expected an integer from 0 to 1000000000",
        jsonl(position(human_responses={"sat": 10**30})),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-float-count",
        "field 'human_responses.sat': expected an integer, got 1.5",
        jsonl(position(human_responses={"sat": 1.5})),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-nul-escape",
        "line 2: a NUL character (\\u0000) in a string",
        jsonl(position(context="The\u0000cat")),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-nul-byte",
        "provo_positions.jsonl: line 2: NUL byte at byte offset",
        jsonl(raw=b'{"text_id": 1\x00}\n'),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-missing-field",
        "line 2: field 'human_responses': missing",
        jsonl({k: v for k, v in position().items() if k != "human_responses"}),
        "provo",
        JSONL,
    ),
    data_case("provo-jsonl-not-object", "line 2: expected a JSON object", jsonl("[1, 2]"), "provo", JSONL),
    data_case(
        "provo-jsonl-text-id-string",
        "line 2: field 'text_id': expected an integer, got '1'",
        jsonl(position(text_id="1")),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-empty",
        "found no instances in",
        write_bytes("data/provo/provo_positions.jsonl", b""),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-no-human-responses",
        "provo_positions.jsonl: line 2: position 1-3: no human responses",
        jsonl(position(human_responses={"NA": 3})),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-repeated-position",
        "line 2: field 'word_num': position 1-2 repeated",
        jsonl(POSITION),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-total-mismatch",
        "field 'total_response_count': 9 is not the sum",
        jsonl(position(total_response_count=9)),
        "provo",
        JSONL,
    ),
    data_case(
        "provo-jsonl-is-folder",
        "provo/: looked for provo_positions.jsonl",
        make_dir("data/provo/provo_positions.jsonl"),
        "provo",
        JSONL,
        protect=(),
    ),
    data_case(
        "provo-long-not-utf8",
        "provo_cloze_responses.csv: line 2: not valid UTF-8",
        responses(b"1,2,cat,caf\xe9,3\n"),
        "provo",
        LONG,
    ),
    data_case(
        "provo-long-passages-not-utf8",
        "provo_passages.csv: line 2: not valid UTF-8",
        then(
            responses("1,2,cat,cat,3\n"),
            write_bytes("data/provo/provo_passages.csv", b"text_id,passage\n1,The c\xe4t sat\n"),
        ),
        "provo",
        LONG,
    ),
    data_case(
        "provo-long-missing-column",
        "provo_cloze_responses.csv: line 1: missing column 'response_count'",
        then(
            PASSAGES,
            write_bytes("data/provo/provo_cloze_responses.csv", "text_id,word_num,target_word,response\n1,2,cat,cat\n"),
        ),
        "provo",
        LONG,
    ),
    data_case(
        "provo-long-negative-count",
        "line 2: field 'response_count': expected an integer from 0",
        responses("1,2,cat,cat,-1\n"),
        "provo",
        LONG,
    ),
    data_case(
        "provo-long-unknown-text", "line 2: field 'text_id': 2 not in", responses("2,2,cat,cat,3\n"), "provo", LONG
    ),
    data_case(
        "provo-long-target-mismatch",
        "field 'target_word': 'dog' but word 2 of passage 1",
        responses("1,2,dog,cat,3\n"),
        "provo",
        LONG,
    ),
    data_case(
        "provo-long-field-too-large",
        "provo_cloze_responses.csv: line 2: not readable as CSV (field larger than field limit",
        responses('1,2,cat,"' + "x" * 200_000 + '",3\n'),
        "provo",
        LONG,
    ),
    data_case("provo-long-header-only", "found no instances in", responses(""), "provo", LONG),
    data_case(
        "provo-option-misspelt",
        "field 'data': loader 'provo': unknown option 'formt'",
        PROVO,
        "provo",
        "{path: provo, formt: auto}",
    ),
    data_case(
        "provo-option-format",
        "option 'format': expected one of 'auto', 'official'",
        PROVO,
        "provo",
        "{path: provo, format: xml}",
    ),
    data_case(
        "provo-option-text-ids-unknown",
        "provo data option 'text_ids': no passage with id [99]",
        PROVO,
        "provo",
        "{path: provo, text_ids: [99]}",
    ),
    data_case(
        "provo-option-text-ids-strings",
        "option 'text_ids': expected a list of integers",
        PROVO,
        "provo",
        "{path: provo, text_ids: [a]}",
    ),
    data_case(
        "provo-option-max-word-num-zero",
        "option 'max_word_num': expected a positive integer, got 0",
        PROVO,
        "provo",
        "{path: provo, max_word_num: 0}",
    ),
    data_case(
        "provo-option-max-word-num-filters-all",
        "found no instances in",
        PROVO,
        "provo",
        "{path: provo, max_word_num: 1}",
    ),
    data_case(
        "provo-option-repair-string",
        "option 'repair_mac_roman': expected true or false, got 'yes'",
        PROVO,
        "provo",
        "{path: provo, repair_mac_roman: 'yes'}",
    ),
    data_case("provo-option-path-empty", "option 'path': expected a folder name, got ''", PROVO, "provo", "{path: ''}"),
]

# ------------------------------------------------------------------------------------------------- ASSET
ASSET = copy_fixture("asset", "data")
ORIG = "data/asset/dataset/asset.valid.orig"
ASSET_JSONL = "data/asset/asset_valid.jsonl"
ASSET_RECORD = {"id": 9, "source": "A b.", "references": ["A."] * 10}


def asset_jsonl(line: str | bytes) -> Step:
    data = line if isinstance(line, bytes) else line.encode()
    return then(ASSET, lambda tmp: (tmp / ASSET_JSONL).write_bytes((tmp / ASSET_JSONL).read_bytes() + data + b"\n"))


ASSET_JSONL_OPTIONS = "{path: asset, split: valid, format: jsonl}"
ASSET_CASES = [
    data_case(
        "asset-official-not-utf8",
        "asset.valid.orig: line 3: not valid UTF-8 (invalid continuation byte at byte offset",
        then(ASSET, replace_bytes(ORIG, b"Photosynthesis", b"Photosynth\xe9sis")),
    ),
    data_case(
        "asset-official-nul-byte",
        "asset.valid.orig: line 3: NUL byte",
        then(ASSET, replace_bytes(ORIG, b"Photosynthesis", b"Photo\x00synthesis")),
    ),
    data_case(
        "asset-official-line-missing",
        "asset.valid.simp.3: 2 lines, expected 3 like asset.valid.orig",
        then(
            ASSET,
            lambda tmp: (tmp / "data/asset/dataset/asset.valid.simp.3").write_bytes(
                b"\n".join((tmp / "data/asset/dataset/asset.valid.simp.3").read_bytes().split(b"\n")[:2])
            ),
        ),
    ),
    data_case(
        "asset-official-empty-sentence",
        "asset.valid.orig: line 2: field 'sentence': empty sentence",
        then(
            ASSET,
            replace_bytes(ORIG, b"Despite heavy rain, the festival attracted more than ten thousand visitors.", b"   "),
        ),
    ),
    data_case(
        "asset-official-all-empty",
        "found no instances in",
        then(
            ASSET,
            *(
                write_bytes(f"data/asset/dataset/asset.valid.{n}", b"")
                for n in ["orig", *(f"simp.{k}" for k in range(10))]
            ),
        ),
    ),
    data_case(
        "asset-official-is-folder",
        "(missing: asset.valid.simp.9)",
        then(ASSET, make_dir("data/asset/dataset/asset.valid.simp.9")),
        "asset",
        "{path: asset, split: valid, format: official}",
    ),
    data_case(
        "asset-jsonl-bad-json",
        "asset_valid.jsonl: line 4: not valid JSON",
        asset_jsonl("{oops"),
        "asset",
        ASSET_JSONL_OPTIONS,
    ),
    data_case(
        "asset-jsonl-refs-count",
        "line 4: field 'references': expected a list of 10 strings, got 3 items",
        asset_jsonl(json.dumps({**ASSET_RECORD, "references": ["a", "b", "c"]})),
        "asset",
        ASSET_JSONL_OPTIONS,
    ),
    data_case(
        "asset-jsonl-id-string",
        "line 4: field 'id': expected an integer, got '9'",
        asset_jsonl(json.dumps({**ASSET_RECORD, "id": "9"})),
        "asset",
        ASSET_JSONL_OPTIONS,
    ),
    data_case(
        "asset-jsonl-id-repeated",
        "line 4: field 'id': 0 repeated (first at line 1)",
        asset_jsonl(json.dumps({**ASSET_RECORD, "id": 0})),
        "asset",
        ASSET_JSONL_OPTIONS,
    ),
    data_case(
        "asset-jsonl-id-huge",
        "line 4: field 'id': expected an integer from 0 to 1000000000",
        asset_jsonl(json.dumps({**ASSET_RECORD, "id": 10**30})),
        "asset",
        ASSET_JSONL_OPTIONS,
    ),
    data_case(
        "asset-jsonl-id-negative",
        "line 4: field 'id': expected an integer from 0 to 1000000000, got -1",
        asset_jsonl(json.dumps({**ASSET_RECORD, "id": -1})),
        "asset",
        ASSET_JSONL_OPTIONS,
    ),
    data_case(
        "asset-jsonl-not-utf8",
        "asset_valid.jsonl: line 4: not valid UTF-8",
        asset_jsonl(b'{"id": 9, "source": "\xff"}'),
        "asset",
        ASSET_JSONL_OPTIONS,
    ),
    data_case(
        "asset-option-misspelt",
        "unknown option 'splt' (accepted: format, path, split)",
        ASSET,
        "asset",
        "{path: asset, splt: valid}",
    ),
    data_case(
        "asset-option-missing-split",
        "asset data option 'split': expected one of valid, test, got None",
        ASSET,
        "asset",
        "{path: asset}",
    ),
    data_case(
        "asset-option-split-train",
        "option 'split': expected one of 'valid', 'test', got 'train'",
        ASSET,
        "asset",
        "{path: asset, split: train}",
    ),
]

# ----------------------------------------------------------------------------------------------- WMT'14
WMT = copy_fixture("wmt14", "data")
GZ = "data/wmt14-multiref/original/wmt14-en-de.extra_refs.gz"
WMT_JSONL = "{path: wmt14-multiref, pair: en-de, format: jsonl}"


def regzip(transform: Callable[[bytes], bytes]) -> Step:
    """Rewrite the release file with its text transformed, gzip-compressed again."""

    def step(tmp: Path) -> None:
        path = tmp / GZ
        path.write_bytes(gzip.compress(transform(gzip.decompress(path.read_bytes())), mtime=0))

    return step


WMT_CASES = [
    data_case(
        "wmt14-gz-damaged",
        "wmt14-en-de.extra_refs.gz: not a readable gzip file",
        then(
            WMT,
            lambda tmp: (tmp / GZ).write_bytes(
                (tmp / GZ).read_bytes()[:20] + b"\xff" * 40 + (tmp / GZ).read_bytes()[60:]
            ),
        ),
    ),
    data_case(
        "wmt14-gz-truncated",
        "wmt14-en-de.extra_refs.gz: not a readable gzip file",
        then(WMT, lambda tmp: (tmp / GZ).write_bytes((tmp / GZ).read_bytes()[:100])),
    ),
    data_case(
        "wmt14-gz-not-gzip",
        "wmt14-en-de.extra_refs.gz: not a readable gzip file",
        then(WMT, write_bytes(GZ, b"S-1\tHello.\n")),
    ),
    data_case(
        "wmt14-gz-not-utf8",
        "wmt14-en-de.extra_refs.gz: line 2: not valid UTF-8",
        then(WMT, regzip(lambda b: b.replace("schön".encode(), b"sch\xf6n", 1))),
    ),
    data_case(
        "wmt14-gz-nul-byte",
        "wmt14-en-de.extra_refs.gz: line 1: NUL byte",
        then(WMT, regzip(lambda b: b.replace(b"weather", b"wea\x00ther", 1))),
    ),
    data_case(
        "wmt14-gz-bad-tag",
        "line 2: field 'tag': expected 'T-1' then a tab and the sentence, got 'X-1",
        then(WMT, regzip(lambda b: b.replace(b"T-1\t", b"X-1\t", 1))),
    ),
    data_case(
        "wmt14-gz-truncated-block",
        "the file ends inside sentence",
        then(WMT, regzip(lambda b: b"\n".join(b.split(b"\n")[:5]) + b"\n")),
    ),
    data_case("wmt14-gz-empty", "found no instances in", then(WMT, regzip(lambda b: b""))),
    data_case(
        "wmt14-jsonl-bad-json",
        "wmt14_en-de_multiref.jsonl: line 1: not valid JSON",
        then(WMT, write_bytes("data/wmt14-multiref/wmt14_en-de_multiref.jsonl", b"{]\n")),
        "wmt14_multiref",
        WMT_JSONL,
    ),
    data_case(
        "wmt14-jsonl-refs-count",
        "field 'additional_references': expected a list of 10 strings, got 1 items",
        then(
            WMT,
            write_bytes(
                "data/wmt14-multiref/wmt14_en-de_multiref.jsonl",
                json.dumps({"id": 1, "source": "a", "original_reference": "b", "additional_references": ["c"]}) + "\n",
            ),
        ),
        "wmt14_multiref",
        WMT_JSONL,
    ),
    data_case(
        "wmt14-option-pair",
        "option 'pair': expected one of 'en-de', 'en-fr', got 'de-en'",
        WMT,
        "wmt14_multiref",
        "{path: wmt14-multiref, pair: de-en}",
    ),
    data_case(
        "wmt14-option-misspelt", "unknown option 'pairs'", WMT, "wmt14_multiref", "{path: wmt14-multiref, pairs: en-de}"
    ),
    data_case(
        "wmt14-option-max-references",
        "option 'max_references': expected an integer from 1 to 11, got 12",
        WMT,
        "wmt14_multiref",
        "{path: wmt14-multiref, pair: en-de, max_references: 12}",
    ),
    data_case(
        "wmt14-file-is-folder",
        "wmt14-multiref/: looked for original/wmt14-en-de.extra_refs.gz",
        then(WMT, make_dir(GZ)),
        "wmt14_multiref",
        "{path: wmt14-multiref, pair: en-de, format: official}",
    ),
]

# ------------------------------------------------------------------------------------------- DailyDialog++
DD = copy_fixture("dailydialog", "data")
DEV = "data/dailydialog-plusplus/dataset/dev.json"
TOPICS = "data/dailydialog-plusplus/dataset/test-v1.0.json"
DD_CASES = [
    data_case("dd-not-utf8", "dev.json: line 1: not valid UTF-8", then(DD, replace_bytes(DEV, b"boxes", b"bo\xf8es"))),
    data_case(
        "dd-bad-json", "dev.json: line 1: not valid JSON", then(DD, replace_bytes(DEV, b'{"id": 0,', b'{"id": 0,,'))
    ),
    data_case(
        "dd-empty-context",
        "dev.json: line 1: field 'context': expected a non-empty list of strings, got []",
        then(
            DD,
            lambda tmp: (tmp / DEV).write_text(
                json.dumps({"id": 0, "context": [], "positive_responses": ["a"]}) + "\n"
            ),
        ),
    ),
    data_case("dd-empty-file", "found no instances in", then(DD, write_bytes(DEV, b""))),
    data_case(
        "dd-topics-bad-json", "test-v1.0.json: line 1: not valid JSON", then(DD, write_bytes(TOPICS, b'{"data": [}'))
    ),
    data_case(
        "dd-topics-deep-nesting",
        "test-v1.0.json: not valid JSON (nested too deeply)",
        then(DD, write_bytes(TOPICS, b"[" * 100_000 + b"]" * 100_000)),
    ),
    data_case(
        "dd-topics-huge-number",
        "test-v1.0.json: not valid JSON (Exceeds the limit",
        then(DD, write_bytes(TOPICS, b'{"data": ' + b"7" * 5000 + b"}")),
    ),
    data_case(
        "dd-topics-not-utf8",
        "test-v1.0.json: line 1: not valid UTF-8",
        then(DD, write_bytes(TOPICS, b'{"data": "\xff"}')),
    ),
    data_case("dd-split-is-folder", "DailyDialog++ dev data not found: looked for", then(DD, make_dir(DEV))),
    data_case(
        "dd-option-misspelt",
        "unknown option 'splits' (accepted: path, split)",
        DD,
        "dailydialog_pp",
        "{path: dailydialog-plusplus, splits: dev}",
    ),
    data_case(
        "dd-option-split-train",
        "option 'split': expected one of 'dev', 'test', got 'train'",
        DD,
        "dailydialog_pp",
        "{path: dailydialog-plusplus, split: train}",
    ),
]

# ------------------------------------------------------------------------------------------- WritingPrompts
WP = copy_fixture("writingprompts", "data/writingprompts")
WP_TARGET = "data/writingprompts/writingPrompts/test.wp_target"
WP_SOURCE = "data/writingprompts/writingPrompts/test.wp_source"
WP_JSONL = "{path: writingprompts, format: jsonl}"
WP_CASES = [
    data_case(
        "wp-not-utf8",
        "test.wp_target: line 3: not valid UTF-8 (invalid start byte at byte offset",
        then(WP, replace_bytes(WP_TARGET, b"cookbook", b"cookb\xf6\xf6k")),
    ),
    data_case(
        "wp-nul-byte",
        "test.wp_source: line 2: NUL byte at byte offset",
        then(WP, replace_bytes(WP_SOURCE, b"A dragon", b"A dr\x00agon")),
    ),
    data_case(
        "wp-line-missing",
        "lines, expected",
        then(
            WP,
            lambda tmp: (tmp / WP_SOURCE).write_bytes(
                b"\n".join((tmp / WP_SOURCE).read_bytes().split(b"\n")[:5]) + b"\n"
            ),
        ),
    ),
    data_case(
        "wp-min-stories-too-high",
        "writingprompts: no prompt has 99 or more distinct stories in",
        WP,
        "writingprompts",
        "{path: writingprompts, min_stories: 99}",
    ),
    data_case(
        "wp-jsonl-bad-json",
        "writingprompts_test.jsonl: line 1: not valid JSON",
        then(WP, write_bytes("data/writingprompts/writingprompts_test.jsonl", b"{\n")),
        "writingprompts",
        WP_JSONL,
    ),
    data_case(
        "wp-jsonl-stories-empty",
        "field 'stories': expected a non-empty list of strings, got []",
        then(
            WP,
            write_bytes("data/writingprompts/writingprompts_test.jsonl", b'{"id": 1, "prompt": "p", "stories": []}\n'),
        ),
        "writingprompts",
        WP_JSONL,
    ),
    data_case(
        "wp-option-misspelt", "unknown option 'min_story'", WP, "writingprompts", "{path: writingprompts, min_story: 3}"
    ),
    data_case(
        "wp-option-min-stories-zero",
        "option 'min_stories': expected a positive integer, got 0",
        WP,
        "writingprompts",
        "{path: writingprompts, min_stories: 0}",
    ),
    data_case(
        "wp-option-file-empty",
        "option 'file': expected a file name, got ''",
        WP,
        "writingprompts",
        "{path: writingprompts, file: ''}",
    ),
]

# ----------------------------------------------------------------------------------------------- pragmatics
PRAG = copy_fixture("pragmatics-mcq", "data/pragmatics-mcq")
RAW_DIR = "data/pragmatics-mcq/hu2023/fj_raw_data"
HUMAN = "data/pragmatics-mcq/hu2023/human_data/fj/Human_Irony.csv"
PRAG_OPTIONS = "{path: pragmatics-mcq, phenomena: " + PRAGMATICS_FIXTURE + "}"
PRAG_JSONL = "{path: pragmatics-mcq, format: jsonl, phenomena: " + PRAGMATICS_FIXTURE + "}"
PRAG_CASES = [
    data_case(
        "prag-hu-not-utf8",
        "IronyScenarios.txt: line 1: not valid UTF-8",
        then(PRAG, replace_bytes(f"{RAW_DIR}/IronyScenarios.txt", b"Lara", b"L\xe0ra")),
        "pragmatics_mcq",
        PRAG_OPTIONS,
    ),
    data_case(
        "prag-hu-field-too-large",
        "IronyScenarios.txt: line 1: not readable as tab-separated cells (field larger than field limit",
        then(PRAG, replace_bytes(f"{RAW_DIR}/IronyScenarios.txt", b"Lara tries", b"Lara " + b"x" * 200_000)),
        "pragmatics_mcq",
        PRAG_OPTIONS,
    ),
    data_case(
        "prag-hu-cell-count",
        "IronyScenarios.txt: line 1: 4 tab-separated cells, expected 3",
        then(PRAG, replace_bytes(f"{RAW_DIR}/IronyScenarios.txt", b"IV\t1\t", b"IV\t1\textra\t")),
        "pragmatics_mcq",
        PRAG_OPTIONS,
    ),
    data_case(
        "prag-human-header-too-large",
        "Human_Irony.csv: line 1: not readable as CSV (field larger than field limit",
        then(PRAG, replace_bytes(HUMAN, b'"pKey"', b'"' + b"k" * 200_000 + b'"')),
        "pragmatics_mcq",
        PRAG_OPTIONS,
    ),
    data_case(
        "prag-human-missing-column",
        "Human_Irony.csv: line 1: column 'OptionChosen' missing",
        then(PRAG, replace_bytes(HUMAN, b'"OptionChosen"', b'"Chosen"')),
        "pragmatics_mcq",
        PRAG_OPTIONS,
    ),
    data_case(
        "prag-human-bad-answer",
        "Human_Irony.csv: line 2: OptionChosen 'Answer9'",
        then(PRAG, replace_bytes(HUMAN, b'"IV","Answer1"', b'"IV","Answer9"')),
        "pragmatics_mcq",
        PRAG_OPTIONS,
    ),
    data_case(
        "prag-raw-dir-is-file",
        "pragmatics-mcq/: looked for hu2023/fj_raw_data/ and pragmatics_items_human_counts.jsonl",
        then(
            PRAG,
            lambda tmp: shutil.rmtree(tmp / RAW_DIR),
            write_bytes(RAW_DIR, b"not a folder"),
            lambda tmp: (tmp / "data/pragmatics-mcq/pragmatics_items_human_counts.jsonl").unlink(),
        ),
        "pragmatics_mcq",
        PRAG_OPTIONS,
    ),
    data_case(
        "prag-jsonl-bad-json",
        "pragmatics_items_human_counts.jsonl: line 1: not valid JSON",
        then(PRAG, write_bytes("data/pragmatics-mcq/pragmatics_items_human_counts.jsonl", b"{{\n")),
        "pragmatics_mcq",
        PRAG_JSONL,
    ),
    data_case(
        "prag-jsonl-unknown-phenomenon",
        "line 1: field 'phenomenon': unknown phenomenon 'Sarcasm'",
        then(
            PRAG,
            replace_bytes(
                "data/pragmatics-mcq/pragmatics_items_human_counts.jsonl",
                b'"phenomenon": "Maxims"',
                b'"phenomenon": "Sarcasm"',
            ),
        ),
        "pragmatics_mcq",
        PRAG_JSONL,
    ),
    data_case(
        "prag-option-phenomenon-unknown",
        "unknown phenomenon 'Sarcasm'",
        PRAG,
        "pragmatics_mcq",
        "{path: pragmatics-mcq, phenomena: [Sarcasm]}",
    ),
    data_case(
        "prag-option-misspelt",
        "unknown option 'phenomenon'",
        PRAG,
        "pragmatics_mcq",
        "{path: pragmatics-mcq, phenomenon: [Irony]}",
    ),
    data_case(
        "prag-option-descriptions",
        "option 'descriptions': expected one of 'tsvilodub', 'hu'",
        PRAG,
        "pragmatics_mcq",
        "{path: pragmatics-mcq, descriptions: mine}",
    ),
]

CASES: list[Case] = [*PROVO_CASES, *ASSET_CASES, *WMT_CASES, *DD_CASES, *WP_CASES, *PRAG_CASES]
