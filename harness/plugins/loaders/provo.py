"""Provo Corpus predictability norms (Luke & Christianson, 2018) as next-word cloze instances.

Two kinds of input are read, so that the harness works both with the official release and with the derived
tables that are all some environments have (see ``docs/data.md``):

* the official OSF release ``Provo_Corpus-Predictability_Norms.csv`` (or the seed repository's TSV copy
  ``Provo_Corpus.tsv``): one row per position and distinct response, with the passage text on every row;
* the derived tables ``provo_positions.jsonl`` (one record per position) or ``provo_cloze_responses.csv`` +
  ``provo_passages.csv`` (long format), which hold the human data the seed paper (Ilia & Aziz, 2024) used.

The official file is turned into positions exactly as the seed code ``preprocess_provo_corpus()`` did, so both
kinds of input give the same instances: responses are summed per (Text_ID, Word_Number, Response), the context
is the first ``Word_Number - 1`` space-separated tokens of the passage and the target is token ``Word_Number``.
Human responses are then normalised with :func:`harness.words.rules.normalise_word` (a phrase kept whole), and the
request kind cuts them by the task's word rule, the function model words go through (``harness.kinds.words``:
under ``provo`` the three responses ``00 puq`` count as ``00``; ``provo-paper`` keeps them as the study did).

The files are parsed by :mod:`harness.plugins.loaders.provo_readers` and the positions become instances in
:mod:`harness.plugins.loaders.provo_instances`; this module finds (or downloads) the files and holds the entry point.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from harness.api import (
    DataNotFoundError,
    HarnessError,
    Instance,
    LoadedData,
    Option,
    Options,
    downloads_allowed,
    hash_files,
    one_of,
    optional,
    read_bytes,
    takes_options,
)
from harness.plugins.loaders import downloads
from harness.plugins.loaders.option_types import count, flag, folder, integers
from harness.plugins.loaders.provo_instances import to_instance
from harness.plugins.loaders.provo_readers import (
    OFFICIAL_COLUMNS,
    decode,
    header_fields,
    read_long_csv,
    read_official,
    read_positions_jsonl,
)

OFFICIAL_CSV = "Provo_Corpus-Predictability_Norms.csv"
SEED_TSV = "Provo_Corpus.tsv"
POSITIONS_JSONL = "provo_positions.jsonl"
RESPONSES_CSV = "provo_cloze_responses.csv"
PASSAGES_CSV = "provo_passages.csv"

OSF_PROJECT_URL = "https://osf.io/sjefs/"
#: OSF file GUID of ``Provo_Corpus-Predictability_Norms.csv`` in the project above. Not checked from this
#: environment (no network); it is the address several public pipelines fetch the norms from, e.g.
#: ``bnicenboim/pangoling`` (``data-raw/DATASET.R``) and two Makefile/shell set-ups that save it as
#: ``provo_norms.csv``. The header check in :func:`_download_official` guards against it serving something else.
OSF_NORMS_URL = "https://osf.io/e4a2m/download"
DOWNLOAD_TIMEOUT_S = 20.0  # per socket operation
DOWNLOAD_DEADLINE_S = 180.0  # whole transfer; the file is a few tens of MB
DOWNLOAD_MAX_BYTES = 200 * 1024 * 1024

FORMATS = ("auto", "official", "positions_jsonl", "long_csv")

#: The ``data:`` options of a Provo task.
OPTIONS = Options(
    Option("path", folder, "provo", "folder under the data root", "str"),
    Option("format", one_of(*FORMATS), "auto", "auto: the first format found", " | ".join(FORMATS)),
    Option("text_ids", optional(integers), None, "passage ids to keep (null: all)", "list of int"),
    Option("max_word_num", optional(count), None, "keep positions up to this word number (null: all)", "int >= 1"),
    Option("repair_mac_roman", flag, False, "map Mac-Roman artefacts such as Õ back to punctuation", "bool"),
)

# --------------------------------------------------------------------------------------------------- entry point


@takes_options(OPTIONS)
def load_provo(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Load the Provo cloze positions found under ``data_dir / options["path"]`` (default ``provo``).

    Options: ``path``; ``format`` (``auto``, ``official``, ``positions_jsonl``, ``long_csv``; ``auto`` prefers
    the official release, then the JSONL, then the long CSV); ``text_ids`` (list of passage ids to keep);
    ``max_word_num`` (keep positions up to this word number; word 1 never has cloze data);
    ``repair_mac_roman`` (map ``Õ`` and friends back to the punctuation they were, default false).
    """
    fmt, sub = options["format"], options["path"]
    text_ids: list[int] | None = options["text_ids"]
    max_word_num: int | None = options["max_word_num"]
    repair: bool = options["repair_mac_roman"]
    root = data_dir / sub

    downloaded_from: str | None = None
    chosen = _choose_format(fmt, root)
    download_note = ""
    if chosen is None and fmt in ("auto", "official"):
        if downloads_allowed():
            try:
                _download_official(root)
                downloaded_from = OSF_NORMS_URL
                chosen = ("official", [root / OFFICIAL_CSV])
            except (OSError, HarnessError) as exc:  # urllib's errors are OSErrors
                download_note = f" Downloading {OSF_NORMS_URL} failed ({downloads.one_line(exc)})."
        else:
            download_note = " Downloads are off (HARNESS_OFFLINE is set)."
    if chosen is None:
        raise DataNotFoundError(_not_found_message(fmt, root, sub) + download_note)

    found_format, files = chosen
    source: dict[str, Any] = {"dataset": "provo", "format": found_format, "files": [str(p) for p in files]}
    if found_format == "official":
        positions = read_official(files[0], source)
    elif found_format == "positions_jsonl":
        positions = read_positions_jsonl(files[0])
    else:
        positions = read_long_csv(files[0], files[1])
    if downloaded_from:
        source["downloaded_from"] = downloaded_from

    source["n_positions_in_file"] = len(positions)
    present_ids = {p.text_id for p in positions}
    if text_ids is not None:
        unknown = sorted(set(text_ids) - present_ids)
        if unknown:
            raise HarnessError(f"provo data option 'text_ids': no passage with id {unknown} in {files[0]}")
        positions = [p for p in positions if p.text_id in set(text_ids)]
        source["text_ids"] = sorted(set(text_ids))
    if max_word_num is not None:
        positions = [p for p in positions if p.word_num <= max_word_num]
        source["max_word_num"] = max_word_num
    source["repair_mac_roman"] = repair

    positions.sort(key=lambda p: (p.text_id, p.word_num))
    instances: list[Instance] = []
    for position in positions:
        instance = to_instance(position, repair)
        if not instance.human_counts:
            # Scorers compare with the people's guesses: a position without any is a damaged row, said here with
            # its file and line rather than later by a scorer that only knows the position's id.
            raise HarnessError(
                f"{position.where or files[0]}: position {instance.id}: no human responses (every response is "
                "missing or empty, or every count is 0)"
            )
        instances.append(instance)
    return LoadedData(instances=instances, data_hash=hash_files(files), source=source)


# ------------------------------------------------------------------------------------------------ finding files


def _candidates(root: Path) -> dict[str, list[Path]]:
    return {
        "official": [root / OFFICIAL_CSV, root / SEED_TSV],
        "positions_jsonl": [root / POSITIONS_JSONL],
        "long_csv": [root / RESPONSES_CSV, root / PASSAGES_CSV],
    }


def _choose_format(fmt: str, root: Path) -> tuple[str, list[Path]] | None:
    """The format to read and its files, or None. The official CSV wins over the TSV copy of it."""
    cands = _candidates(root)
    order = ["official", "positions_jsonl", "long_csv"] if fmt == "auto" else [fmt]
    for name in order:
        paths = cands[name]
        if name == "official":
            for p in paths:
                if p.is_file():
                    return name, [p]
        elif all(p.is_file() for p in paths):
            return name, paths
    return None


def _not_found_message(fmt: str, root: Path, sub: object) -> str:
    """Where the loader looked (the folder once, then the file names) and how to give it the data, in one line
    short enough to read."""
    cands = _candidates(root)
    order = ["official", "positions_jsonl", "long_csv"] if fmt == "auto" else [fmt]
    looked = []
    for name in order:
        names = [p.name for p in cands[name]]
        looked.append(" or ".join(names) if name == "official" else " + ".join(names))
    return (
        f"Provo data (format {fmt}) not found in {root}/: looked for {'; '.join(looked)}. "
        f"Get it with 'harness data fetch provo' ({OSF_PROJECT_URL}), or use --data-dir DIR or HARNESS_DATA_DIR=DIR "
        f"(DIR/{sub if len(str(sub)) <= 24 else '...'}/)."
    )


# ---------------------------------------------------------------------------------------------------- download


def _open_url(url: str, timeout: float) -> BinaryIO:
    """Open ``url`` for reading; a seam so tests can serve bytes without a network."""
    return downloads.open_url(url, timeout, "variability-harness (provo loader)")


def _download_official(root: Path) -> Path:
    """Fetch the official norms CSV into ``root``, atomically: a partial or wrong file never takes its name."""
    return downloads.fetch_atomic(
        OSF_NORMS_URL,
        root / OFFICIAL_CSV,
        opener=_open_url,
        timeout=DOWNLOAD_TIMEOUT_S,
        max_bytes=DOWNLOAD_MAX_BYTES,
        deadline=downloads.Deadline.after(DOWNLOAD_DEADLINE_S),
        what="the norms file",
        check=_check_norms_header,
        prefix=".provo-download-",
        chunk_size=1 << 16,
    )


def _check_norms_header(path: Path) -> None:
    """OSF answers some failures with an HTML page and status 200, so the header decides what was fetched."""
    text, _ = decode(read_bytes(path, "download")[:65536])
    header = header_fields(text.splitlines()[0] if text else "")
    missing = [c for c in OFFICIAL_COLUMNS if c not in header]
    if missing:
        raise HarnessError(f"the response is not the norms CSV (no column {', '.join(missing)})")
