"""Pragmatic interpretation multiple-choice items with human choice counts (Hu et al., 2023; Tsvilodub et al., 2024).

Seven phenomena (CoherenceInference, Deceits, Humour, IndirectSpeech, Irony, Maxims, Metaphor), 170 items in all,
each answered by the same 374 participants (Floyd, Jouravlev et al., in prep., as redistributed by Hu et al.).
Each item becomes a :class:`ChoiceInstance` with id ``"<phenomenon>-<item>"``, its options in the release's
``option_num`` order and the number of people who chose each.

Two kinds of input are read, so that the harness works with the official release and with the derived JSONL copy
some environments hold:

* ``hu``: the release in ``jennhu/lm-pragmatics``: the item files ``hu2023/fj_raw_data/<Ph>{Scenarios,Options,
  KeySimple,KeyComplex,Instructions}.txt`` and the trial-level choices ``hu2023/human_data/fj/Human_<Ph>.csv``,
  counted per item here;
* ``jsonl``: the derived ``pragmatics_items_human_counts.jsonl``, one item per line with the counts already made.

Both give identical instances (the tests check this on the real data). The ``.txt`` files are spreadsheet exports:
tab-separated, no header, some with CR line endings, and a cell holding quotes is wrapped in quotes with the inner
ones doubled, so they are read as tab-separated CSV; a Maxims scenario even holds a CR inside its quoted cell.
Their columns differ by phenomenon (Maxims scenarios and options have no task-code column, Metaphor's simple key
repeats the option text, Deceits' and Metaphor's complex keys repeat the scenario), so each file is read by name
through ``_COLUMNS`` and a row with another number of cells is an error rather than a silently shifted column.
CoherenceInference has no options file: every item asks whether two sentences are "Coherent" (option 1) or
"Incoherent" (option 2), its simple key names the right one, and the wrong one is typed ``IncorrectCoherent`` or
``IncorrectIncoherent`` (after its text) as in the derived JSONL. The ``Deceits*_Control.txt`` files hold literal
control items with no human data and are not read. Texts are stripped of whitespace at both ends (cells end in
spaces and stray CRs) and otherwise kept exactly as released.

Maxims item 13 is kept although both papers' LM prompts drop it, because the human data have it (see
:func:`load_pragmatics_mcq`); a task that wants the papers' 19 Maxims items can leave it out by id. Irony item 16
keeps the release's labels too, although they type options 3 and 4 both ``IncorrectAssociate`` (Tsvilodub et al.'s
proportions table calls option 4 ``IncorrectNonSequitur``): labels are data here, not something to correct.

The task description a prompt opens with is, by default, Tsvilodub et al.'s forced-choice instruction
(``tsvilodub2024/prompt/prompts/<name>_instructions_FC.txt``), written for one item at a time;
``descriptions: hu`` gives the instructions the participants read instead, which speak of stories in the plural
and of the answer options' numbers.

When the official files a load needs are missing (``format`` ``auto`` with no derived JSONL to fall back on, or
``hu``) and ``HARNESS_OFFLINE`` is not set, exactly those files are fetched from ``raw.githubusercontent.com`` at
the commits ``SOURCE.md`` pins, so that every user reads the bytes the tests and notes were checked against, even
after the repositories move on. Neither repository has a license file, which is why the files are fetched from
their authors' repositories for each user rather than shipped with the harness. The fetch is all or nothing: each
file arrives under a temporary name and all are renamed into place only once every one has arrived, so a failed
download leaves the data folder as it was rather than a partial copy that ``auto`` would take for the release.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from harness.data import LoadedData, downloads_allowed, hash_files, takes_options
from harness.errors import DataNotFoundError, HarnessError
from harness.instances import ChoiceInstance, Instance
from harness.options import Option, Options, one_of, optional
from plugins.loaders import downloads
from plugins.loaders.option_types import folder
from plugins.loaders.text_files import decode_utf8, file_lines, jsonl_records

LOADER = "pragmatics_mcq"
DEFAULT_PATH = "pragmatics-mcq"
FORMATS = ("auto", "hu", "jsonl")
DESCRIPTIONS = ("tsvilodub", "hu")
HU_REPO = "jennhu/lm-pragmatics"
HU_COMMIT = "9fd4be5c0e43162c9d6e09b6024cc000e40b3398"
HU_REPO_URL = f"https://github.com/{HU_REPO}"
TSVILODUB_REPO = "polina-tsvilodub/LLM_link"
TSVILODUB_COMMIT = "2cfc65228c5c8f9d8d4f6660d68b1c7487b4b773"
TSVILODUB_REPO_URL = f"https://github.com/{TSVILODUB_REPO}"
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
DOWNLOAD_TIMEOUT_S = 20.0  # per socket operation
DOWNLOAD_DEADLINE_S = 300.0  # all files together; they are about 2.3 MB in all
DOWNLOAD_MAX_BYTES = 8 * 1024 * 1024  # per file; the largest (Human_CoherenceInference.csv) is 0.5 MB

#: Phenomena in instance order, with the task code of the release's first column and the number of options.
PHENOMENA = ("CoherenceInference", "Deceits", "Humour", "IndirectSpeech", "Irony", "Maxims", "Metaphor")
TASK_CODES = {
    "CoherenceInference": "CIV",
    "Deceits": "DV",
    "Humour": "HV",
    "IndirectSpeech": "ISV",
    "Irony": "IV",
    "Maxims": "MV",
    "Metaphor": "MPV",
}
N_OPTIONS = {
    "CoherenceInference": 2,
    "Deceits": 4,
    "Humour": 5,
    "IndirectSpeech": 4,
    "Irony": 4,
    "Maxims": 4,
    "Metaphor": 5,
}
#: The file-name stem of each phenomenon's instruction in Tsvilodub et al.'s ``prompt/prompts/``.
TSVILODUB_NAMES = {
    "CoherenceInference": "coherence",
    "Deceits": "deceits",
    "Humour": "humour",
    "IndirectSpeech": "indirect_speech",
    "Irony": "irony",
    "Maxims": "maxims",
    "Metaphor": "metaphor",
}
COHERENCE_OPTIONS = ("Coherent", "Incoherent")
SIMPLE_LABELS = ("Correct", "Incorrect")

HU_DIR = Path("hu2023")
RAW_DIR = HU_DIR / "fj_raw_data"
HUMAN_DIR = HU_DIR / "human_data" / "fj"
JSONL_NAME = "pragmatics_items_human_counts.jsonl"
TSVILODUB_DIR = Path("tsvilodub2024")
TSVILODUB_PROMPTS = TSVILODUB_DIR / "prompt" / "prompts"
#: The local folder of each release and the repository and pinned commit it is a copy of; below the folder, the
#: paths are the repository's own.
RELEASES = {
    HU_DIR.name: (HU_REPO, HU_COMMIT),
    TSVILODUB_DIR.name: (TSVILODUB_REPO, TSVILODUB_COMMIT),
}

# The cells of each item file, by phenomenon where it differs from the default ("_" cells are read but unused).
_DEFAULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "Scenarios": ("code", "item", "text"),
    "Options": ("code", "item", "option", "text"),
    "KeySimple": ("code", "item", "option", "label"),
    "KeyComplex": ("code", "item", "option", "label"),
}
_COLUMNS: dict[tuple[str, str], tuple[str, ...]] = {
    ("Maxims", "Scenarios"): ("item", "text"),
    ("Maxims", "Options"): ("item", "option", "text"),
    ("Maxims", "KeyComplex"): ("code", "item", "option", "label", "maxim"),
    ("Metaphor", "KeySimple"): ("code", "item", "option", "_", "label"),
    ("Metaphor", "KeyComplex"): ("code", "item", "option", "_", "_", "_", "label"),
    ("Deceits", "KeyComplex"): ("code", "item", "option", "label", "_", "_"),
    ("CoherenceInference", "KeySimple"): ("code", "item", "label"),
}


@dataclass
class _Item:
    """One item as read from either format, before it becomes an instance."""

    phenomenon: str
    item_id: int
    task_code: str
    scenario: str
    options: list[str]
    label_simple: list[str]
    label_complex: list[str]
    counts: list[int]
    #: What the participants were told; empty where it was not read (``descriptions: tsvilodub``, ``hu`` format).
    instructions: str = ""
    maxim: str | None = None
    #: Where the counts were read ("PATH" of the trials or "PATH: line N" of the JSONL), for the errors about them.
    counts_from: str = ""


def phenomenon_list(value: Any) -> list[str]:
    """A non-empty list of phenomena named as in the data (a misspelt name is an error, not a smaller task)."""
    if not isinstance(value, list | tuple) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a non-empty list of names, got {value!r}")
    bad = [v for v in value if v not in PHENOMENA]
    if bad:
        raise ValueError(f"unknown phenomenon {', '.join(repr(v) for v in bad)}; known: {', '.join(PHENOMENA)}")
    return list(value)


#: The ``data:`` options of the pragmatics task.
OPTIONS = Options(
    Option("path", folder, DEFAULT_PATH, "folder under the data root (an absolute path is used as it is)", "str"),
    Option("format", one_of(*FORMATS), "auto", "auto: the release, else jsonl, else a download", " | ".join(FORMATS)),
    Option("phenomena", optional(phenomenon_list), None, "phenomena to keep (null: all seven)", "list of str"),
    Option("descriptions", one_of(*DESCRIPTIONS), "tsvilodub", "whose task descriptions", " | ".join(DESCRIPTIONS)),
)


@takes_options(OPTIONS)
def load_pragmatics_mcq(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Load the pragmatics items from ``data_dir / path`` (an absolute ``path`` is used as it is).

    Options: ``path`` (default ``pragmatics-mcq``); ``format`` (``auto`` reads the official release when
    ``hu2023/fj_raw_data`` is there, else the derived JSONL, else the release it downloads; ``hu``, which downloads
    whatever files of the release are missing; ``jsonl``, never downloaded); ``phenomena`` (a list restricting
    the phenomena, named as in the data; all seven by default); ``descriptions`` (``tsvilodub``, the default, or
    ``hu``: see the module docstring).

    All 170 items are kept, Maxims item 13 included: both papers' LM prompts drop it (Hu et al.'s prompt files and
    Tsvilodub et al.'s ``data_hu_maxims.csv`` have 19 Maxims items), but the human data have all 374 choices for
    it, and the comparison with people is what the data set is for.
    """
    fmt = options.get("format", "auto")
    if fmt not in FORMATS:
        raise HarnessError(f"{LOADER} data option 'format': expected one of {', '.join(FORMATS)}, got {fmt!r}")
    descriptions = options.get("descriptions", "tsvilodub")
    if descriptions not in DESCRIPTIONS:
        raise HarnessError(
            f"{LOADER} data option 'descriptions': expected one of {', '.join(DESCRIPTIONS)}, got {descriptions!r}"
        )
    phenomena = _phenomena(options.get("phenomena"))
    sub = options.get("path", DEFAULT_PATH)
    if not isinstance(sub, str) or not sub:
        raise HarnessError(f"{LOADER} data option 'path': expected a folder name, got {sub!r}")
    root = data_dir / sub
    raw_dir, jsonl_path = root / RAW_DIR, root / JSONL_NAME

    # Fetch only where the release would be read: ``auto`` prefers a local derived copy to the network.
    downloaded_from: list[str] = []
    download_note = ""
    if fmt == "hu" or (fmt == "auto" and (raw_dir.is_dir() or not jsonl_path.is_file())):
        missing = [p for p in _official_paths(root, phenomena, descriptions) if not p.is_file()]
        if missing and downloads_allowed():
            try:
                downloaded_from = _download_official(root, missing)
            except downloads.DownloadFailed as exc:
                download_note = f" {exc}."
        elif missing:
            download_note = " Downloads are off (HARNESS_OFFLINE is set)."

    files: list[Path] = []
    if fmt in ("auto", "hu") and raw_dir.is_dir():
        found = "hu"
        items = _read_hu(root, phenomena, descriptions == "hu", files, download_note)
    elif fmt in ("auto", "jsonl") and jsonl_path.is_file():
        found = "jsonl"
        items = _read_jsonl(jsonl_path, phenomena)
        files.append(jsonl_path)
    else:
        looked = [f"{raw_dir}/"] if fmt in ("auto", "hu") else []
        looked += [str(jsonl_path)] if fmt in ("auto", "jsonl") else []
        raise DataNotFoundError(
            f"pragmatics-mcq data (format {fmt}) not found: looked for {' and '.join(looked)}. "
            f"Point the harness at a copy with --data-dir DIR or HARNESS_DATA_DIR=DIR, with the files in DIR/{sub}/. "
            f"The official files are fj_raw_data/ and human_data/fj/ in {HU_REPO_URL}; put them in DIR/{sub}/hu2023/."
            + download_note
        )
    texts = _read_tsvilodub(root, phenomena, files, download_note) if descriptions == "tsvilodub" else {}
    human_n = _check_same_n(items)

    instances: list[Instance] = []
    for item in items:
        meta: dict[str, Any] = {"task_code": item.task_code}
        if item.maxim is not None:
            meta["maxim"] = item.maxim
        meta["label_simple"] = list(item.label_simple)
        meta["human_n"] = sum(item.counts)
        instances.append(
            ChoiceInstance(
                id=f"{item.phenomenon}-{item.item_id}",
                phenomenon=item.phenomenon,
                item_id=item.item_id,
                description=texts.get(item.phenomenon, item.instructions),
                scenario=item.scenario,
                options=tuple(item.options),
                option_types=tuple(item.label_complex),
                target=item.label_simple.index("Correct"),
                human_counts=tuple(item.counts),
                meta=meta,
            )
        )
    source_info: dict[str, Any] = {
        "dataset": "pragmatics-mcq",
        "path": str(root),
        "format": found,
        "descriptions": descriptions,
        "phenomena": list(phenomena),
        "n_files": len(files),
        "n_items": len(instances),
        "human_n": human_n,
    }
    if downloaded_from:
        source_info["downloaded_from"] = downloaded_from
    return LoadedData(instances=instances, data_hash=hash_files(files), source=source_info)


def _phenomena(value: object) -> tuple[str, ...]:
    """The requested phenomena in instance order (all of them for None); see :func:`phenomenon_list`."""
    if value is None:
        return PHENOMENA
    try:
        names = phenomenon_list(value)
    except ValueError as exc:
        raise HarnessError(f"{LOADER} data option 'phenomena': {exc}") from None
    return tuple(p for p in PHENOMENA if p in names)


def _check_one_correct(labels: list[str], where: str) -> None:
    """Both formats' check: a target is only defined when exactly one option is keyed Correct."""
    bad = [label for label in labels if label not in SIMPLE_LABELS]
    if bad:
        raise HarnessError(f"{where}: simple label {bad[0]!r}, expected Correct or Incorrect")
    n_correct = labels.count("Correct")
    if n_correct != 1:
        raise HarnessError(f"{where}: {n_correct} Correct options, expected exactly one")


def _check_same_n(items: list[_Item]) -> int:
    """Every participant answered every item, so another total means lost, extra or misnumbered trials."""
    if not items:
        return 0
    first = items[0]
    n = sum(first.counts)
    for item in items:
        total = sum(item.counts)
        if total != n:
            raise HarnessError(
                f"{item.counts_from}: {item.phenomenon} item {item.item_id}: {total} human responses, "
                f"expected {n} like {first.phenomenon} item {first.item_id}"
            )
    return n


def _tsvilodub_path(root: Path, phenomenon: str) -> Path:
    """One place for the name, since both the reader and the download need it."""
    return root / TSVILODUB_PROMPTS / f"{TSVILODUB_NAMES[phenomenon]}_instructions_FC.txt"


def _read_tsvilodub(root: Path, phenomena: tuple[str, ...], files: list[Path], note: str = "") -> dict[str, str]:
    """Each phenomenon's forced-choice instruction from Tsvilodub et al.'s prompt folder."""
    texts: dict[str, str] = {}
    for phenomenon in phenomena:
        path = _tsvilodub_path(root, phenomenon)
        if not path.is_file():
            raise DataNotFoundError(
                f"pragmatics-mcq task description not found: looked for {path} (prompt/prompts/ in "
                f"{TSVILODUB_REPO_URL}); put it there, or set the data option 'descriptions: hu' to open prompts "
                "with the instructions shown to participants instead." + note
            )
        texts[phenomenon] = decode_utf8(path.read_bytes(), path).strip()
        files.append(path)
    return texts


# -------------------------------------------------------------------------------------------------- download


def _official_paths(root: Path, phenomena: tuple[str, ...], descriptions: str) -> list[Path]:
    """Every release file a ``hu`` load of these phenomena reads, so a download fetches those and no others."""
    paths = [path for p in phenomena for path in _hu_paths(root, p, descriptions == "hu").values()]
    if descriptions == "tsvilodub":
        paths += [_tsvilodub_path(root, p) for p in phenomena]
    return paths


def _official_url(root: Path, path: Path) -> tuple[str, str]:
    """The raw URL of a local release file at its pinned commit, and the repository it comes from (for ``source``)."""
    release, *inside = path.relative_to(root).parts
    repo, commit = RELEASES[release]
    url = RAW_URL.format(repo=repo, commit=commit, path=urllib.parse.quote("/".join(inside)))
    return url, f"https://github.com/{repo}/tree/{commit}"


def _open_url(url: str, timeout: float) -> BinaryIO:
    """Open ``url`` for reading; a seam so tests can serve bytes without a network."""
    return downloads.open_url(url, timeout, "variability-harness (pragmatics-mcq loader)")


def _download_official(root: Path, paths: list[Path]) -> list[str]:
    """Fetch ``paths`` (under ``root``) from their repositories; the repositories' URLs at their commits.

    All or nothing: every file is streamed to a temporary name in its folder and the renames happen only after
    the last one arrived, and folders this call made are removed again on failure. A half-fetched release would
    otherwise make ``auto`` choose the ``hu`` format over a derived JSONL added later, and fail there offline.
    """
    deadline = downloads.Deadline.after(DOWNLOAD_DEADLINE_S)
    created: list[Path] = []
    fetched: list[tuple[Path, Path]] = []  # (temporary file, destination)
    repos: list[str] = []
    try:
        for path in paths:
            url, repo_url = _official_url(root, path)
            new_folders = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            created.extend(reversed(new_folders))
            try:
                tmp = downloads.fetch_to_temp(
                    url,
                    path.parent,
                    opener=_open_url,
                    timeout=DOWNLOAD_TIMEOUT_S,
                    max_bytes=DOWNLOAD_MAX_BYTES,
                    deadline=deadline,
                    what=f"{path.name} of the release",
                    prefix=f".{path.name}-",
                )
            except (OSError, HarnessError) as exc:  # urllib's errors are OSErrors
                raise downloads.DownloadFailed(url, downloads.one_line(exc)) from exc
            fetched.append((tmp, path))
            if repo_url not in repos:
                repos.append(repo_url)
        for tmp, path in fetched:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in fetched:
            tmp.unlink(missing_ok=True)
        for folder in reversed(created):  # deepest first; a folder that holds anything stays
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return repos


# ------------------------------------------------------------------------------------------------- hu format


def _hu_paths(root: Path, phenomenon: str, instructions: bool) -> dict[str, Path]:
    """The files read for one phenomenon, keyed by kind."""
    raw = root / RAW_DIR
    kinds = ["Scenarios", "KeySimple"]
    if phenomenon != "CoherenceInference":  # it has neither: both follow from its simple key
        kinds += ["Options", "KeyComplex"]
    if instructions:
        kinds.append("Instructions")
    paths = {kind: raw / f"{phenomenon}{kind}.txt" for kind in kinds}
    paths["Human"] = root / HUMAN_DIR / f"Human_{phenomenon}.csv"
    return paths


def _read_hu(
    root: Path, phenomena: tuple[str, ...], instructions: bool, files: list[Path], note: str = ""
) -> list[_Item]:
    """All items of the requested phenomena from the official release, in instance order."""
    per_phenomenon = {p: _hu_paths(root, p, instructions) for p in phenomena}
    missing = [str(path) for paths in per_phenomenon.values() for path in paths.values() if not path.is_file()]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise DataNotFoundError(
            f"pragmatics-mcq data (format hu) incomplete under {root}: missing {shown}. The official files are "
            f"fj_raw_data/ and human_data/fj/ in {HU_REPO_URL}; put them in {root / HU_DIR}/." + note
        )
    items: list[_Item] = []
    for phenomenon, paths in per_phenomenon.items():
        items.extend(_read_hu_phenomenon(phenomenon, paths))
        files.extend(paths.values())
    return items


_Table = dict[int, dict[int, dict[str, str]]]  # item -> option number -> named cells


def _read_hu_phenomenon(phenomenon: str, paths: dict[str, Path]) -> list[_Item]:
    """One phenomenon's items: scenario, options and keys joined on (item, option), then the counted choices."""
    n_options = N_OPTIONS[phenomenon]
    scenarios: dict[int, str] = {}
    for where, item, _, row in _rows(paths["Scenarios"], phenomenon, "Scenarios"):
        if item in scenarios:
            raise HarnessError(f"{where}: item {item} repeated")
        scenarios[item] = row["text"]
    if phenomenon == "CoherenceInference":
        options, simple, complex_ = _coherence_tables(paths["KeySimple"])
        tables = {"KeySimple": simple}
    else:
        tables = {kind: _table(paths[kind], phenomenon, kind) for kind in ("Options", "KeySimple", "KeyComplex")}
        options, simple, complex_ = tables["Options"], tables["KeySimple"], tables["KeyComplex"]
    numbers = list(range(1, n_options + 1))
    for kind, table in tables.items():
        extra = sorted(set(table) - set(scenarios))
        if extra:
            raise HarnessError(f"{paths[kind]}: item {extra[0]}: not in {paths['Scenarios'].name}")
        for item_id in sorted(scenarios):
            got = sorted(table.get(item_id, {}))
            if got != numbers:
                raise HarnessError(
                    f"{paths[kind]}: item {item_id}: option numbers {got}, expected 1 to {n_options} for {phenomenon}"
                )
    counts = _count_choices(paths["Human"], phenomenon, set(scenarios))
    instructions = ""
    if "Instructions" in paths:
        instructions = decode_utf8(paths["Instructions"].read_bytes(), paths["Instructions"]).strip()

    items: list[_Item] = []
    for item_id in sorted(scenarios):
        label_simple = [simple[item_id][k]["label"] for k in numbers]
        _check_one_correct(label_simple, f"{paths['KeySimple']}: item {item_id}")
        maxim = None
        if phenomenon == "Maxims":
            maxims = {complex_[item_id][k]["maxim"] for k in numbers}
            if len(maxims) != 1:
                raise HarnessError(f"{paths['KeyComplex']}: item {item_id}: maxims {sorted(maxims)}, expected one")
            (maxim,) = maxims
        items.append(
            _Item(
                phenomenon=phenomenon,
                item_id=item_id,
                task_code=TASK_CODES[phenomenon],
                scenario=scenarios[item_id],
                options=[options[item_id][k]["text"] for k in numbers],
                label_simple=label_simple,
                label_complex=[complex_[item_id][k]["label"] for k in numbers],
                counts=counts.get(item_id, [0] * n_options),
                instructions=instructions,
                maxim=maxim,
                counts_from=str(paths["Human"]),
            )
        )
    return items


def _table(path: Path, phenomenon: str, kind: str) -> _Table:
    """An options or key file by item and option number. The keys are not in option order, so no order is assumed."""
    table: _Table = {}
    for where, item, option, row in _rows(path, phenomenon, kind):
        if option is None:  # pragma: no cover - every layout of these kinds has an option column
            raise HarnessError(f"{where}: no option number")
        if option in table.setdefault(item, {}):
            raise HarnessError(f"{where}: item {item} option {option} repeated")
        table[item][option] = row
    return table


def _coherence_tables(path: Path) -> tuple[_Table, _Table, _Table]:
    """Options, simple and complex keys of CoherenceInference, all made from its simple key.

    Each row names the right answer; the other option is typed ``Incorrect<its text>`` (``IncorrectIncoherent``
    for a coherent pair), as the derived JSONL types it, so the two formats agree.
    """
    options: _Table = {}
    simple: _Table = {}
    complex_: _Table = {}
    for where, item, _, row in _rows(path, "CoherenceInference", "KeySimple"):
        if item in simple:
            raise HarnessError(f"{where}: item {item} repeated")
        answer = row["label"]
        if answer not in COHERENCE_OPTIONS:
            raise HarnessError(f"{where}: item {item}: key {answer!r}, expected Coherent or Incoherent")
        options[item], simple[item], complex_[item] = {}, {}, {}
        for k, text in enumerate(COHERENCE_OPTIONS, start=1):
            options[item][k] = {"text": text}
            simple[item][k] = {"label": "Correct" if text == answer else "Incorrect"}
            complex_[item][k] = {"label": "Correct" if text == answer else f"Incorrect{text}"}
    return options, simple, complex_


def _rows(path: Path, phenomenon: str, kind: str) -> list[tuple[str, int, int | None, dict[str, str]]]:
    """``(where, item, option number or None, named cells)`` for each row of an item file.

    Cells are stripped; ``_`` columns (texts the file repeats from another) are dropped. A task code other than
    the phenomenon's means another phenomenon's file, so it is an error.
    """
    columns = _COLUMNS.get((phenomenon, kind), _DEFAULT_COLUMNS[kind])
    code = TASK_CODES[phenomenon]
    # newline="" splits lines at CR, LF and CRLF alike and leaves a CR inside a quoted cell to the csv module;
    # strict makes a stray quote an error instead of a cell that runs on.
    text = decode_utf8(path.read_bytes(), path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", strict=True)
    out: list[tuple[str, int, int | None, dict[str, str]]] = []
    try:
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            where = f"{path}: line {reader.line_num}"
            if len(cells) != len(columns):
                named = ", ".join(c for c in columns if c != "_")
                raise HarnessError(f"{where}: {len(cells)} tab-separated cells, expected {len(columns)} ({named}, ...)")
            row = {name: cell.strip() for name, cell in zip(columns, cells, strict=True) if name != "_"}
            if "code" in row and row["code"] != code:
                raise HarnessError(f"{where}: task code {row['code']!r}, expected {code!r} for {phenomenon}")
            empty = [name for name in ("text", "label", "maxim") if row.get(name) == ""]
            if empty:
                raise HarnessError(f"{where}: the {empty[0]} cell is empty")
            broken = [name for name, cell in row.items() if "\n" in cell or "\r" in cell]
            if broken:  # no released cell has one once stripped; a quote opened and never closed makes one
                raise HarnessError(f"{where}: a line break inside the {broken[0]} cell (an unclosed quote?)")
            item = _number(row["item"], where, "item")
            option = _number(row["option"], where, "option") if "option" in row else None
            out.append((where, item, option, row))
    except csv.Error as exc:  # text after a closing quote, or a quote never closed
        raise HarnessError(f"{path}: line {reader.line_num}: not readable as tab-separated cells ({exc})") from None
    return out


def _number(cell: str, where: str, name: str) -> int:
    if not cell.isdigit():
        raise HarnessError(f"{where}: {name} {cell!r}: expected a positive integer")
    return int(cell)


def _count_choices(path: Path, phenomenon: str, items: set[int]) -> dict[int, list[int]]:
    """Per item, how many participants chose each option (``Answer<k>``, or Coherent/Incoherent as options 1/2).

    The trials' ``Correct`` cells are not read: the key decides which option is the target.
    """
    n_options, code = N_OPTIONS[phenomenon], TASK_CODES[phenomenon]
    if phenomenon == "CoherenceInference":
        chosen = {name: k for k, name in enumerate(COHERENCE_OPTIONS, start=1)}
    else:
        chosen = {f"Answer{k}": k for k in range(1, n_options + 1)}
    reader = csv.DictReader(io.StringIO(decode_utf8(path.read_bytes(), path), newline=""))
    missing = [name for name in ("itemNum", "Task", "OptionChosen") if name not in (reader.fieldnames or [])]
    if missing:
        raise HarnessError(f"{path}: line 1: column {missing[0]!r} missing")
    counts: dict[int, list[int]] = {}
    try:
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            if row["Task"] != code:
                raise HarnessError(f"{where}: Task {row['Task']!r}, expected {code!r}")
            item = _number(row["itemNum"] or "", where, "itemNum")
            if item not in items:
                raise HarnessError(f"{where}: item {item}: not in {phenomenon}Scenarios.txt")
            option = chosen.get(row["OptionChosen"] or "")
            if option is None:
                raise HarnessError(
                    f"{where}: OptionChosen {row['OptionChosen']!r}, expected one of {', '.join(chosen)}"
                )
            counts.setdefault(item, [0] * n_options)[option - 1] += 1
    except csv.Error as exc:
        raise HarnessError(f"{path}: line {reader.line_num}: not readable as CSV ({exc})") from None
    return counts


# ---------------------------------------------------------------------------------------------- jsonl format


def _read_jsonl(path: Path, phenomena: tuple[str, ...]) -> list[_Item]:
    """The derived JSONL's items of the requested phenomena, in instance order. Records have no ``id``: they are
    keyed by (phenomenon, item_id), which is checked here."""
    required = ("phenomenon", "task_code", "item_id", "instructions", "scenario", "options")
    seen: dict[tuple[str, int], str] = {}
    items: list[_Item] = []
    for where, record in jsonl_records(
        path, file_lines(path), (*required, "target_option_num", "human_n"), unique_id=False
    ):
        phenomenon = record["phenomenon"]
        if phenomenon not in PHENOMENA:
            raise HarnessError(f"{where}: field 'phenomenon': unknown phenomenon {phenomenon!r}")
        item_id = _json_int(record["item_id"], where, "item_id")
        if (phenomenon, item_id) in seen:
            first = seen[(phenomenon, item_id)].rsplit(" ", 1)[-1]
            raise HarnessError(f"{where}: {phenomenon} item {item_id} repeated (first at line {first})")
        seen[(phenomenon, item_id)] = where
        if phenomenon in phenomena:
            items.append(_jsonl_item(record, where))
    absent = [p for p in phenomena if not any(item.phenomenon == p for item in items)]
    if absent:
        raise HarnessError(f"{path}: no items for {', '.join(absent)}")
    items.sort(key=lambda item: (PHENOMENA.index(item.phenomenon), item.item_id))
    return items


def _jsonl_item(record: dict[str, Any], line: str) -> _Item:
    """One record as an item, checked as the official files are (options 1..n, one Correct, counts summing to N)."""
    phenomenon = record["phenomenon"]
    where = f"{line}: {phenomenon} item {record['item_id']}"
    strings = {name: record[name] for name in ("task_code", "instructions", "scenario")}
    if "maxim" in record:
        strings["maxim"] = record["maxim"]
    for name, value in strings.items():
        if not isinstance(value, str) or not value.strip():
            raise HarnessError(f"{where}: field '{name}': expected a non-empty string")
    options = record["options"]
    n_options = N_OPTIONS[phenomenon]
    if not isinstance(options, list) or len(options) != n_options:
        got = f"{len(options)} options" if isinstance(options, list) else repr(options)[:40]
        raise HarnessError(f"{where}: field 'options': expected a list of {n_options} options, got {got}")
    columns: dict[str, list[Any]] = {"text": [], "label_simple": [], "label_complex": [], "human_count": []}
    for k, option in enumerate(options):
        if not isinstance(option, dict) or option.get("option_num") != k + 1:
            raise HarnessError(f"{where}: field 'options[{k}]': expected an object with option_num {k + 1}")
        for name, values in columns.items():
            value = option.get(name)
            if name == "human_count":
                values.append(_json_int(value, where, f"options[{k}].human_count"))
            elif isinstance(value, str) and value.strip():
                values.append(value.strip())
            else:
                raise HarnessError(f"{where}: field 'options[{k}].{name}': expected a non-empty string")
    _check_one_correct(columns["label_simple"], where)
    target = _json_int(record["target_option_num"], where, "target_option_num")
    if not 1 <= target <= n_options or columns["label_simple"][target - 1] != "Correct":
        raise HarnessError(f"{where}: field 'target_option_num': {target} is not the Correct option")
    human_n = _json_int(record["human_n"], where, "human_n")
    if human_n != sum(columns["human_count"]):
        raise HarnessError(f"{where}: field 'human_n': {human_n}, but the counts sum to {sum(columns['human_count'])}")
    return _Item(
        phenomenon=phenomenon,
        item_id=record["item_id"],
        task_code=strings["task_code"].strip(),
        scenario=strings["scenario"].strip(),
        options=columns["text"],
        label_simple=columns["label_simple"],
        label_complex=columns["label_complex"],
        counts=columns["human_count"],
        instructions=strings["instructions"].strip(),
        maxim=strings["maxim"].strip() if "maxim" in strings else None,
        counts_from=line,
    )


def _json_int(value: object, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise HarnessError(f"{where}: field '{name}': expected an integer, got {value!r}")
    return value
