"""WMT'14 newstest2014 with 10 extra human references per source (Ott et al., 2018) as generation instances.

Each English source sentence has 11 human translations (the original WMT reference and 10 more written by
professional translators), which is what makes the set usable for comparing a model's output distribution with
human production variability (Giulianelli et al., 2023, used en-de). Two kinds of input are read, so that the
harness works with the official release and with the derived JSONL copy some environments hold:

* the official ``original/wmt14-{pair}.extra_refs.gz`` from ``facebookresearch/analyzing-uncertainty-nmt``:
  ``TAG<TAB>sentence`` lines, 12 per source (``S-n``, ``T-n``, ``R1-n`` … ``R10-n``);
* the derived ``wmt14_{pair}_multiref.jsonl``: one record per source with ``id``, ``source``,
  ``original_reference`` and ``additional_references`` (the schema of ``utils.py::load_wmt14_data`` in
  ``dmg-illc/nlg-uncertainty-probes``).

Both give identical instances (the tests check this on the real data). The official file is validated strictly
(tag order and sentence numbers), because a misplaced line would silently pair a source with another sentence's
translations. No download is attempted: the data set's provenance notes name the repository, not a download
address, so the not-found error says where to get the files instead.

Which human translations become an instance's ``references`` is the ``references`` option: ``all`` (the default:
the 11, in the release's order ``T, R1 … R10``), ``additional`` (``R1 … R10``: the 10 additional references only,
the human production set of Giulianelli et al., 2023) or ``first_K`` (the first K of ``T, R1 … R10``, so the
original reference is always among them). ``max_references`` then keeps the first k of the selection. A selection
other than the default is part of the data's identity: ``data_hash`` hashes it with the file, and the source record
names it, so results read with different selections are never taken for comparable.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.api import (
    DataNotFoundError,
    GenerationInstance,
    HarnessError,
    Instance,
    LoadedData,
    Option,
    Options,
    hash_files,
    one_line,
    one_of,
    optional,
    shorten_repr,
    takes_options,
)
from harness.plugins.loaders.option_types import folder
from harness.plugins.loaders.text_files import decode_utf8, file_lines, jsonl_records

LOADER = "wmt14_multiref"
DEFAULT_PATH = "wmt14-multiref"
#: Language pair -> language of the references (the productions a probe would tag).
PAIRS = {"en-de": "de", "en-fr": "fr"}
FORMATS = ("auto", "official", "jsonl")
N_EXTRA = 10  # R1..R10
#: Tags of one source's block, in the order the release writes them.
BLOCK_TAGS = ("S", "T", *(f"R{k}" for k in range(1, N_EXTRA + 1)))
TAG_RE = re.compile(r"^(S|T|R(?:[1-9]|10))-(\d+)$")
JSONL_FIELDS = ("id", "source", "original_reference", "additional_references")
#: The release decompresses to about 2 MB per pair; far more is not that file (or is a decompression bomb).
MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
REPO_URL = "https://github.com/facebookresearch/analyzing-uncertainty-nmt"
#: The references of a record, in the order the loader keeps them (the release's): the original WMT one, then R1..R10.
REFERENCE_TAGS = BLOCK_TAGS[1:]
#: ``references`` values besides ``first_K``; the first is the default (today's behaviour: all 11).
SELECTIONS = ("all", "additional")
DEFAULT_SELECTION = "all"
FIRST_RE = re.compile(r"first_([1-9][0-9]?)")  # whole value: fullmatch


def reference_count(value: Any) -> int:
    """How many of the 11 references to keep: an integer from 1 to 11."""
    n_refs = 1 + N_EXTRA
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= n_refs:
        raise ValueError(f"expected an integer from 1 to {n_refs}, got {shorten_repr(value)}")
    return value


def reference_selection(value: Any) -> str:
    """Which references to keep: ``all``, ``additional`` or ``first_K`` (1 <= K <= 11)."""
    n_refs = len(REFERENCE_TAGS)
    if isinstance(value, str):
        match = FIRST_RE.fullmatch(value)
        if value in SELECTIONS or (match is not None and 1 <= int(match.group(1)) <= n_refs):
            return value
    raise ValueError(
        f"expected {', '.join(SELECTIONS)} or first_K with 1 <= K <= {n_refs} (the first K of T, R1 … R10), "
        f"got {shorten_repr(value)}"
    )


reference_selection.type_name = "all | additional | first_K (1 <= K <= 11)"  # type: ignore[attr-defined]


def selected_tags(selection: str, max_refs: int | None = None) -> tuple[str, ...]:
    """The tags of the references a selection keeps (``max_refs``: only the first k of them), in the loader's order.

    >>> selected_tags("additional", 3)
    ('R1', 'R2', 'R3')
    >>> selected_tags("first_2")
    ('T', 'R1')
    """
    if selection == "all":
        tags = REFERENCE_TAGS
    elif selection == "additional":
        tags = REFERENCE_TAGS[1:]
    else:
        match = FIRST_RE.fullmatch(selection)
        if match is None:  # reference_selection refuses it first
            raise ValueError(f"not a reference selection: {selection!r}")
        tags = REFERENCE_TAGS[: int(match.group(1))]
    return tags if max_refs is None else tags[:max_refs]


def selection_hash(files_hash: str, tags: tuple[str, ...]) -> str:
    """The data hash of a selection: the files' hash as it is for all 11 references (so the default's hash is the
    hash of the file read), else a hash of it and the kept tags, so that two selections never share a hash."""
    if tags == REFERENCE_TAGS:
        return files_hash
    digest = hashlib.sha256()
    digest.update(files_hash.encode())
    digest.update(b"\0references=" + ",".join(tags).encode())
    return "sha256:" + digest.hexdigest()


#: The ``data:`` options of a WMT'14 multi-reference task.
OPTIONS = Options(
    Option("path", folder, DEFAULT_PATH, "folder under the data root", "str"),
    Option("pair", one_of(*PAIRS), None, "en-de or en-fr (required)", " | ".join(PAIRS)),
    Option("format", one_of(*FORMATS), "auto", "auto prefers official (the .gz), then jsonl", " | ".join(FORMATS)),
    Option(
        "references",
        reference_selection,
        DEFAULT_SELECTION,
        "all: T, R1..R10 (11); additional: R1..R10 (10, the paper's); first_K: the first K of T, R1..R10",
    ),
    Option(
        "max_references",
        optional(reference_count),
        None,
        "keep the first k of the selected references (null: all of them)",
        "1 <= int <= 11",
    ),
)


@takes_options(OPTIONS)
def load_wmt14_multiref(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Load the multi-reference newstest2014 sources of one language pair from ``data_dir / path``.

    Options: ``path`` (default ``wmt14-multiref``); ``pair`` (``en-de`` or ``en-fr``, required); ``format``
    (``auto`` prefers the official ``.gz``, then the JSONL; ``official``; ``jsonl``); ``references`` (``all``, the
    default: ``T, R1 … R10``; ``additional``: ``R1 … R10``; ``first_K``: the first K of ``T, R1 … R10``);
    ``max_references`` (keep the first k of the selected references).
    """
    pair, fmt, sub = options["pair"], options["format"], options["path"]
    if pair is None:  # required: OPTIONS checks a given pair, not that one is given
        raise HarnessError(f"{LOADER} data option 'pair': expected one of {', '.join(PAIRS)}, got None")
    selection: str = options["references"]
    max_refs: int | None = options["max_references"]
    available = selected_tags(selection)
    if max_refs is not None and max_refs > len(available):
        raise HarnessError(
            f"{LOADER} data option 'max_references': {max_refs} is more than the {len(available)} references "
            f"that 'references: {selection}' selects"
        )
    tags = available[:max_refs] if max_refs is not None else available
    keep = [REFERENCE_TAGS.index(tag) for tag in tags]
    root = data_dir / sub
    official = root / "original" / f"wmt14-{pair}.extra_refs.gz"
    derived = root / f"wmt14_{pair}_multiref.jsonl"

    if fmt in ("auto", "official") and official.is_file():
        found, path = "official", official
        records = _read_official(official)
    elif fmt in ("auto", "jsonl") and derived.is_file():
        found, path = "jsonl", derived
        records = _read_jsonl(derived)
    else:
        looked = [
            str(p.relative_to(root)) for p, f in ((official, "official"), (derived, "jsonl")) if fmt in ("auto", f)
        ]
        raise DataNotFoundError(
            f"WMT'14 multi-reference data ({pair}, format {fmt}) not found in {root}/: looked for "
            f"{' and '.join(looked)}. Get it with 'harness data fetch wmt14-multiref' (official {official.name} of "
            f"{REPO_URL}), or use --data-dir DIR or HARNESS_DATA_DIR=DIR (files in DIR/{sub}/)."
        )

    language = PAIRS[pair]
    instances: list[Instance] = [
        GenerationInstance(
            id=str(number),
            source=source,
            references=tuple(refs[k] for k in keep),
            language=language,
            meta={"sentence_number": number},
        )
        for number, source, refs in records
    ]
    source_info: dict[str, Any] = {
        "dataset": "wmt14-multiref",
        "pair": pair,
        "format": found,
        "files": [str(path)],
        "n_sources": len(instances),
        "n_references": len(tags),
    }
    if tags != REFERENCE_TAGS:  # the default's record stays as it was; any other selection is named
        source_info["references"] = selection
        source_info["reference_tags"] = list(tags)
    return LoadedData(instances=instances, data_hash=selection_hash(hash_files([path]), tags), source=source_info)


# ------------------------------------------------------------------------------------------------------ readers

_Record = tuple[int, str, tuple[str, ...]]  # sentence number, source, (T, R1..R10)


def _read_official(path: Path) -> list[_Record]:
    """The release's 12-line blocks. Every tag is checked against its place in the block, and every number
    against the block's ``S-n``: the file has no other structure, so order is the only evidence of alignment."""
    try:
        with gzip.open(path, "rb") as handle:
            data = handle.read(MAX_DECOMPRESSED_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError; truncated: EOFError; damaged: zlib
        raise HarnessError(f"{path}: not a readable gzip file ({one_line(str(exc), 120)})") from None
    if len(data) > MAX_DECOMPRESSED_BYTES:
        raise HarnessError(f"{path}: more than {MAX_DECOMPRESSED_BYTES} bytes once decompressed; is it the right file?")
    lines = decode_utf8(data, path).split("\n")
    while lines and not lines[-1].strip():  # the release ends with a newline; tolerate extra blank lines
        lines.pop()
    block = len(BLOCK_TAGS)
    records: list[_Record] = []
    seen: dict[int, int] = {}  # sentence number -> line of its S tag
    number = -1
    texts: list[str] = []
    for index, line in enumerate(lines):
        line_no = index + 1
        expected_kind = BLOCK_TAGS[index % block]
        tag, tab, sentence = line.partition("\t")
        tag = tag.strip()
        where = f"{path}: line {line_no}"
        match = TAG_RE.match(tag)
        if not tab or match is None:
            shown = f"'{expected_kind}-n'" if expected_kind == "S" else f"'{expected_kind}-{number}'"
            raise HarnessError(
                f"{where}: field 'tag': expected {shown} then a tab and the sentence, got {shorten_repr(line, 40)}"
            )
        kind, n = match.group(1), int(match.group(2))
        if expected_kind == "S":
            if kind != "S":
                raise HarnessError(
                    f"{where}: field 'tag': expected a new source 'S-n' (each source has 12 lines: S-n, T-n, "
                    f"R1-n … R10-n), got {shorten_repr(tag)}"
                )
            if n in seen:
                raise HarnessError(f"{where}: field 'tag': sentence {n} repeated (first at line {seen[n]})")
            seen[n] = line_no
            number, texts = n, []
        elif kind != expected_kind or n != number:
            raise HarnessError(
                f"{where}: field 'tag': expected '{expected_kind}-{number}' (each source has 12 lines: S-n, T-n, "
                f"R1-n … R10-n), got {shorten_repr(tag)}"
            )
        text = sentence.strip()
        if not text:
            raise HarnessError(f"{where}: field '{tag}': empty sentence")
        texts.append(text)
        if len(texts) == block:
            records.append((number, texts[0], tuple(texts[1:])))
    if len(lines) % block:
        missing = BLOCK_TAGS[len(lines) % block]
        raise HarnessError(
            f"{path}: line {len(lines)}: the file ends inside sentence {number}: expected '{missing}-{number}' "
            f"on line {len(lines) + 1}"
        )
    return records


def _read_jsonl(path: Path) -> list[_Record]:
    """The derived JSONL. It must hold what the official file holds (10 additional references per source), so
    that the two formats can never give different instances for the same options."""
    records: list[_Record] = []
    for where, record in jsonl_records(path, file_lines(path), JSONL_FIELDS):
        number = record["id"]
        extra = record["additional_references"]
        if not isinstance(extra, list) or len(extra) != N_EXTRA:
            got = f"{len(extra)} items" if isinstance(extra, list) else repr(extra)[:40]
            raise HarnessError(
                f"{where}: field 'additional_references': expected a list of {N_EXTRA} strings, got {got}"
            )
        texts = [
            _text(record["source"], where, "source"),
            _text(record["original_reference"], where, "original_reference"),
            *(_text(x, where, f"additional_references[{k}]") for k, x in enumerate(extra)),
        ]
        records.append((number, texts[0], tuple(texts[1:])))
    return records


def _text(value: object, where: str, name: str) -> str:
    if not isinstance(value, str):
        raise HarnessError(f"{where}: field '{name}': expected a string, got {shorten_repr(value)}")
    text = value.strip()
    if not text:
        raise HarnessError(f"{where}: field '{name}': empty sentence")
    return text
