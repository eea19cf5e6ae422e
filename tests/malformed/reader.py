"""The generic loaders' reader (``harness/plugins/loaders/generic/table.py``, ``file_rows.py``, ``json_rows.py``,
``human.py``): files damaged the ways people's own data files get damaged (saved as Latin-1 or UTF-16, an extra
comma, a broken JSON Lines row, a CSV named ``.parquet``, empty, a header without rows), options that point nowhere
(``json_field``, a ``filter`` that keeps nothing, neither ``files`` nor ``hub``) and numbers that cannot be right
(proportions summing to more than 1, a share without its answer, a count of 10^30 people).

Each case writes a task file ``{tmp}/task.yaml`` over a small file under ``{tmp}/data`` and runs ``harness run
--human-only`` on it: one line naming the task file, the data file, the line or row where known, and the cause.
"""

from __future__ import annotations

from tests.malformed.case import Case, yaml_text

ARGV = ("run", "--tasks", "{tmp}/task.yaml", "--human-only", "--data-dir", "{tmp}/data", "--output-dir", "{tmp}/out")
PROTECT = ("data/**/*",)
#: How every generic loader's data error starts after the case's folder (the task file's name).
TASK = "task.yaml: "

#: loader -> (request, scorers) of a task file that reads it.
REQUESTS = {
    "generic_cloze": ("sample_words", "[tvd]"),
    "generic_choice": ("multiple_choice", "[mcq_human]"),
    "generic_generation": ("generate", "[lexical]"),
}
CLOZE = "{files: %s, group_by: item, context: ctx, human: {shape: long, responses: r, counts: n}}"
CLOZE_CSV = "item,ctx,r,n\n1,The,cat,2\n1,The,dog,1\n"


def reader_case(
    case_id: str, expect: str, files: dict[str, bytes | str], data: str, loader: str = "generic_cloze"
) -> Case:
    """``harness run`` on ``{tmp}/task.yaml`` (``loader`` with data options ``data``) over ``files`` under ``{tmp}``."""
    request, scorers = REQUESTS[loader]
    fields = {"task": "toy", "version": "1", "loader": loader, "data": data, "request": request, "scorers": scorers}
    return Case(case_id, ARGV, expect, {**files, "task.yaml": yaml_text(fields)}, protect=PROTECT)


CASES = [
    # ------------------------------------------------------------------------------------------------ the bytes
    reader_case(
        "reader-latin1-csv",
        "data/norms.csv: line 3: not UTF-8 (byte 0xe9 at byte offset 34; Latin-1 or Windows-1252?); save it as UTF-8",
        {"data/norms.csv": "item,ctx,r,n\n1,The,cat,2\n1,The,caf\xe9,1\n".encode("latin-1")},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-utf16-csv",
        "data/norms.csv: UTF-16 text (it starts with the UTF-16 byte order mark FF FE), not UTF-8; save it as UTF-8",
        {"data/norms.csv": CLOZE_CSV.encode("utf-16")},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-utf16-jsonl-without-mark",
        "data/g.jsonl: line 1: NUL byte at byte offset 1 (UTF-16 text without a byte order mark?; save it as UTF-8)",
        {"data/g.jsonl": '{"ctx": "The", "g": ["cat"]}\n'.encode("utf-16-le")},
        "{files: g.jsonl, context: ctx, human: {shape: list, responses: g}}",
    ),
    reader_case(
        "reader-extra-comma",
        "data/norms.csv: line 3: 5 fields, but the header has 4 (an extra comma, or a comma inside a field that is "
        "not in double quotes?)",
        {"data/norms.csv": "item,ctx,r,n\n1,The,cat,2\n1,The,dog,,1\n"},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-extra-tab",
        "data/norms.tsv: line 2: 5 fields, but the header has 4 (an extra tab",
        {"data/norms.tsv": "item\tctx\tr\tn\n1\tThe\tcat\t2\t\n"},
        CLOZE % "norms.tsv",
    ),
    reader_case(
        "reader-empty-csv",
        "data/norms.csv: empty file (0 bytes), no rows",
        {"data/norms.csv": b""},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-blank-jsonl",
        "data/g.jsonl: empty file (only white space), no rows",
        {"data/g.jsonl": "\n\n  \n"},
        "{files: g.jsonl, context: ctx, human: {shape: list, responses: g}}",
    ),
    reader_case(
        "reader-header-only",
        "data/norms.csv: header only, no rows (columns: item, ctx, r, n)",
        {"data/norms.csv": "item,ctx,r,n\n"},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-duplicate-column",
        "data/norms.csv: line 1 (the header): columns 3 and 4 are both named 'r'",
        {"data/norms.csv": "item,ctx,r,r\n1,The,cat,2\n"},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-broken-jsonl-row",
        "data/g.jsonl: line 2: not valid JSON (Expecting ',' delimiter)",
        {"data/g.jsonl": '{"ctx": "The", "g": ["cat"]}\n{"ctx": "A", "g": ["dog"]\n{"ctx": "B", "g": ["x"]}\n'},
        "{files: g.jsonl, context: ctx, human: {shape: list, responses: g}}",
    ),
    reader_case(
        "reader-jsonl-row-not-an-object",
        "data/g.jsonl: line 2: expected a JSON object (one record a line), got a list",
        {"data/g.jsonl": '{"ctx": "The", "g": ["cat"]}\n["A", ["dog"]]\n'},
        "{files: g.jsonl, context: ctx, human: {shape: list, responses: g}}",
    ),
    reader_case(
        "reader-broken-json",
        "data/g.json: line 2, column 1: not valid JSON (Expecting value)",
        {"data/g.json": '[{"ctx": "The", "g": ["cat"]},\n]\n'},
        "{files: g.json, context: ctx, human: {shape: list, responses: g}}",
    ),
    reader_case(
        "reader-fake-parquet",
        "data/g.parquet: not a Parquet file (no 'PAR1' at its start; it begins as text: 'item,ctx,r,n\\n1,The,cat,2",
        {"data/g.parquet": CLOZE_CSV},
        CLOZE % "g.parquet",
    ),
    reader_case(
        "reader-truncated-parquet",
        "data/g.parquet: not a complete Parquet file (no 'PAR1' at its end: truncated?)",
        {"data/g.parquet": b"PAR1" + b"\x15\x04" * 40},
        CLOZE % "g.parquet",
    ),
    # ---------------------------------------------------------------------------------------------- the options
    reader_case(
        "reader-json-field-nowhere",
        "data/g.json: data option 'json_field': no key 'records' in the file (its keys: version, data)",
        {"data/g.json": '{"version": 2, "data": [{"ctx": "The", "g": ["cat"]}]}'},
        "{files: g.json, json_field: records, context: ctx, human: {shape: list, responses: g}}",
    ),
    reader_case(
        "reader-json-without-json-field",
        "data/g.json: the file holds an object, not a list of records (set 'json_field' to the key of the list",
        {"data/g.json": '{"version": 2, "data": [{"ctx": "The", "g": ["cat"]}]}'},
        "{files: g.json, context: ctx, human: {shape: list, responses: g}}",
    ),
    reader_case(
        "reader-filter-keeps-none",
        "data option 'filter' '{{ item == \"2\" }}' kept none of the 2 rows of ",
        {"data/norms.csv": CLOZE_CSV},
        "{files: norms.csv, filter: '{{ item == \"2\" }}', group_by: item, context: ctx, "
        "human: {shape: long, responses: r, counts: n}}",
    ),
    reader_case(
        "reader-neither-files-nor-hub",
        TASK + "data options of loader 'generic_cloze': give exactly one of 'files' and 'hub'",
        {"data/norms.csv": CLOZE_CSV},
        "{context: ctx, human: {shape: list, responses: g}}",
    ),
    reader_case(
        "reader-generation-proportions",
        TASK + "data options of loader 'generic_generation': 'human': generation needs the productions themselves",
        {"data/refs.csv": "src,ref,p\nHallo,Hello,1.0\n"},
        "{files: refs.csv, source: src, human: {shape: long, responses: ref, proportions: p}}",
        loader="generic_generation",
    ),
    reader_case(
        "reader-columns-not-a-number",
        "data/norms.csv: row 2: column 'item' (declared int in 'columns'): expected a whole number, got 'one'",
        {"data/norms.csv": "item,ctx,r,n\n1,The,cat,2\none,The,dog,1\n"},
        "{files: norms.csv, columns: {item: int}, group_by: item, context: ctx, "
        "human: {shape: long, responses: r, counts: n}}",
    ),
    # --------------------------------------------------------------------------------- numbers that cannot be
    reader_case(
        "reader-proportions-over-one",
        "data/shares.csv: row 1: columns 'share_*': the instance's proportions sum to 2 (0.8 + 0.7 + 0.5), more "
        "than 1: not shares of one group of people",
        {"data/shares.csv": "ctx,answer_1,share_1,answer_2,share_2,answer_3,share_3\nThe,cat,0.8,dog,0.7,cow,0.5\n"},
        "{files: shares.csv, context: ctx, human: {shape: parallel, responses: answer_*, proportions: share_*, "
        "n_people: 10}}",
    ),
    reader_case(
        "reader-share-without-answer",
        "data/shares.csv: row 1: column 'answer_2': empty, but its number 'share_2' is '0.3'",
        {"data/shares.csv": "ctx,answer_1,share_1,answer_2,share_2\nThe,cat,0.7,,0.3\n"},
        "{files: shares.csv, context: ctx, human: {shape: parallel, responses: answer_*, proportions: share_*}}",
    ),
    reader_case(
        "reader-count-1e30",
        "data/norms.csv: row 1: field 'human.counts' (column 'n'): '1e30' is more than 1,000,000,000 people, not a "
        "count of people",
        {"data/norms.csv": "item,ctx,r,n\n1,The,cat,1e30\n"},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-negative-count",
        "data/norms.csv: row 2: field 'human.counts' (column 'n'): expected a count (a whole number >= 0), got '-1'",
        {"data/norms.csv": "item,ctx,r,n\n1,The,cat,2\n1,The,dog,-1\n"},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-infinite-count",
        "data/norms.csv: row 1: field 'human.counts' (column 'n'): expected a count (a whole number >= 0), got 'inf'",
        {"data/norms.csv": "item,ctx,r,n\n1,The,cat,inf\n"},
        CLOZE % "norms.csv",
    ),
    reader_case(
        "reader-option-key-as-written",
        "data/ratings.csv: row 1: field 'human.responses': '5' is not an option key (keys: 1.0, 2.0, 3.0, 4.0, 5.0)",
        {"data/ratings.csv": "item,text,rating\na,How good?,5\n"},
        "{files: ratings.csv, group_by: item, text: text, options: {'1.0': one, '2.0': two, '3.0': three, "
        "'4.0': four, '5.0': five}, human: {shape: long, responses: rating}}",
        loader="generic_choice",
    ),
]
