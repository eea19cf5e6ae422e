"""ASSET sentence simplification (Alva-Manchego et al., 2020): 10 human simplifications per source sentence.

Two kinds of input are read, so that the harness works with the official release and with the derived JSONL copy
some environments hold:

* the official ``dataset/asset.{split}.orig`` and ``dataset/asset.{split}.simp.{0..9}`` from
  ``facebookresearch/asset``: plain text, one sentence per line, line i of every file about the same source (the
  last line has no trailing newline);
* the derived ``asset_{split}.jsonl``: ``{"id": i, "source": ..., "references": [simp.0 line i, ...]}`` (the
  schema of ``utils.py::transform_asset_dataset`` in ``dmg-illc/nlg-uncertainty-probes``).

Both give identical instances (the tests check this on the real data). The eleven official files are aligned by
line number only, so they must all have the same number of lines; a file that is one line short would otherwise
shift every later reference onto the wrong source. Every sentence is stripped of whitespace at both ends (a few
``valid`` simplifications start or end with spaces or no-break spaces); spaces inside are kept as released.
``source["n_stripped"]`` counts the strings this changed. No download is attempted: the provenance notes name the
repository, not a download address, so the not-found error says where to get the files.
"""

from __future__ import annotations

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
    one_of,
    shorten_repr,
    takes_options,
)
from harness.plugins.loaders.option_types import folder
from harness.plugins.loaders.text_files import file_lines, jsonl_records, read_utf8

LOADER = "asset"
DEFAULT_PATH = "asset"
SPLITS = ("valid", "test")
FORMATS = ("auto", "official", "jsonl")
N_REFS = 10
REPO_URL = "https://github.com/facebookresearch/asset"
#: The ``data:`` options of an ASSET task.
OPTIONS = Options(
    Option("path", folder, DEFAULT_PATH, "folder under the data root", "str"),
    Option("split", one_of(*SPLITS), None, "valid or test (required: ASSET has no train split)", " | ".join(SPLITS)),
    Option("format", one_of(*FORMATS), "auto", "auto: official (text files), else jsonl", " | ".join(FORMATS)),
)


@takes_options(OPTIONS)
def load_asset(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Load one ASSET split from ``data_dir / path``.

    Options: ``path`` (default ``asset``); ``split`` (``valid`` or ``test``, required: ASSET has no train split);
    ``format`` (``auto`` prefers the official text files, then the JSONL; ``official``; ``jsonl``).
    """
    split, fmt, sub = options["split"], options["format"], options["path"]
    if split is None:  # required: OPTIONS checks a given split, not that one is given
        raise HarnessError(f"{LOADER} data option 'split': expected one of {', '.join(SPLITS)}, got None")
    root = data_dir / sub
    official = [root / "dataset" / f"asset.{split}.orig"] + [
        root / "dataset" / f"asset.{split}.simp.{k}" for k in range(N_REFS)
    ]
    derived = root / f"asset_{split}.jsonl"

    stats = {"n_stripped": 0}
    if fmt in ("auto", "official") and all(p.is_file() for p in official):
        found, files = "official", official
        records = _read_official(official, stats)
    elif fmt in ("auto", "jsonl") and derived.is_file():
        found, files = "jsonl", [derived]
        records = _read_jsonl(derived, stats)
    else:
        looked = []
        if fmt in ("auto", "official"):
            absent = [p.name for p in official if not p.is_file()]
            shown = "all" if len(absent) == len(official) else ", ".join(absent[:3])
            more = f" and {len(absent) - 3} more" if 3 < len(absent) < len(official) else ""
            looked.append(f"dataset/asset.{split}.orig + .simp.0-9 (missing: {shown}{more})")
        if fmt in ("auto", "jsonl"):
            looked.append(derived.name)
        raise DataNotFoundError(
            f"ASSET {split} data (format {fmt}) not found in {root}/: looked for {' and '.join(looked)}. "
            f"Get it with 'harness data fetch asset' (official dataset/ of {REPO_URL}), or use --data-dir DIR or "
            f"HARNESS_DATA_DIR=DIR (files in DIR/{sub}/dataset/)."
        )

    instances: list[Instance] = [
        GenerationInstance(id=str(index), source=source, references=refs, language="en")
        for index, source, refs in records
    ]
    source_info: dict[str, Any] = {
        "dataset": "asset",
        "split": split,
        "format": found,
        "files": [str(p) for p in files],
        "n_sources": len(instances),
        "n_references": N_REFS,
        "n_stripped": stats["n_stripped"],
    }
    return LoadedData(instances=instances, data_hash=hash_files(files), source=source_info)


# ------------------------------------------------------------------------------------------------------ readers

_Record = tuple[int, str, tuple[str, ...]]  # line index (0-based), source, references


def _read_official(paths: list[Path], stats: dict[str, int]) -> list[_Record]:
    """The ``.orig`` file and the ten ``.simp.k`` files, zipped by line after checking their lengths agree."""
    columns = [_lines(p) for p in paths]
    expected = len(columns[0])
    for path, lines in zip(paths[1:], columns[1:], strict=True):
        if len(lines) != expected:
            raise HarnessError(
                f"{path}: {len(lines)} lines, expected {expected} like {paths[0].name} (the files are aligned by line)"
            )
    records: list[_Record] = []
    for index in range(expected):
        texts = [
            _clean(lines[index], f"{path}: line {index + 1}", "sentence", stats)
            for path, lines in zip(paths, columns, strict=True)
        ]
        records.append((index, texts[0], tuple(texts[1:])))
    return records


def _lines(path: Path) -> list[str]:
    """The file's lines. The release has no newline after the last line; one there is accepted, not counted."""
    text = read_utf8(path, "data file")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []


def _read_jsonl(path: Path, stats: dict[str, int]) -> list[_Record]:
    """The derived JSONL; it must hold what the official files hold (10 references per source)."""
    records: list[_Record] = []
    for where, record in jsonl_records(path, file_lines(path), ("id", "source", "references")):
        index = record["id"]
        refs = record["references"]
        if not isinstance(refs, list) or len(refs) != N_REFS:
            got = f"{len(refs)} items" if isinstance(refs, list) else shorten_repr(refs, 40)
            raise HarnessError(f"{where}: field 'references': expected a list of {N_REFS} strings, got {got}")
        source = _clean(record["source"], where, "source", stats)
        texts = tuple(_clean(x, where, f"references[{k}]", stats) for k, x in enumerate(refs))
        records.append((index, source, texts))
    return records


def _clean(value: object, where: str, name: str, stats: dict[str, int]) -> str:
    """The sentence stripped at both ends. An empty one is an error: it is how a misaligned file usually shows."""
    if not isinstance(value, str):
        raise HarnessError(f"{where}: field '{name}': expected a string, got {shorten_repr(value)}")
    text = value.strip()
    if not text:
        raise HarnessError(f"{where}: field '{name}': empty sentence")
    if text != value:
        stats["n_stripped"] += 1
    return text
