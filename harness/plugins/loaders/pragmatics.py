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

Both give identical instances (the tests check this on the real data). How the release's item files are read
is described in :mod:`harness.plugins.loaders.pragmatics_hu`; the derived JSONL is read by
:mod:`harness.plugins.loaders.pragmatics_jsonl`, Tsvilodub et al.'s task descriptions by
:mod:`harness.plugins.loaders.pragmatics_tsvilodub`, and both formats' items are checked in
:mod:`harness.plugins.loaders.pragmatics_items`. What the releases name things and where they keep them is in
:mod:`harness.plugins.loaders.pragmatics_release`.

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
import os
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from harness.api import (
    ChoiceInstance,
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
    shorten_repr,
    takes_options,
)
from harness.plugins.loaders import downloads
from harness.plugins.loaders.option_types import folder
from harness.plugins.loaders.pragmatics_hu import hu_paths, read_hu
from harness.plugins.loaders.pragmatics_items import check_same_n
from harness.plugins.loaders.pragmatics_jsonl import read_jsonl
from harness.plugins.loaders.pragmatics_release import HU_REPO_URL, JSONL_NAME, PHENOMENA, RAW_DIR, RELEASES
from harness.plugins.loaders.pragmatics_tsvilodub import read_tsvilodub, tsvilodub_path

LOADER = "pragmatics_mcq"
DEFAULT_PATH = "pragmatics-mcq"
FORMATS = ("auto", "hu", "jsonl")
DESCRIPTIONS = ("tsvilodub", "hu")
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
DOWNLOAD_TIMEOUT_S = 20.0  # per socket operation
DOWNLOAD_DEADLINE_S = 300.0  # all files together; they are about 2.3 MB in all
DOWNLOAD_MAX_BYTES = 8 * 1024 * 1024  # per file; the largest (Human_CoherenceInference.csv) is 0.5 MB


def phenomenon_list(value: Any) -> list[str]:
    """A non-empty list of phenomena named as in the data (a misspelt name is an error, not a smaller task)."""
    if not isinstance(value, list | tuple) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a non-empty list of names, got {shorten_repr(value)}")
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
    fmt, descriptions, sub = options["format"], options["descriptions"], options["path"]
    phenomena = _phenomena(options["phenomena"])
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
        items = read_hu(root, phenomena, descriptions == "hu", files, download_note)
    elif fmt in ("auto", "jsonl") and jsonl_path.is_file():
        found = "jsonl"
        items = read_jsonl(jsonl_path, phenomena)
        files.append(jsonl_path)
    else:
        looked = [f"{RAW_DIR}/"] if fmt in ("auto", "hu") else []
        looked += [JSONL_NAME] if fmt in ("auto", "jsonl") else []
        raise DataNotFoundError(
            f"pragmatics-mcq data (format {fmt}) not found in {root}/: looked for {' and '.join(looked)}. "
            f"Get it with 'harness data fetch pragmatics-mcq' (official fj_raw_data/ and human_data/fj/ of "
            f"{HU_REPO_URL}), or use --data-dir DIR or HARNESS_DATA_DIR=DIR (files in DIR/{sub}/hu2023/)."
            + download_note
        )
    texts = read_tsvilodub(root, phenomena, files, download_note) if descriptions == "tsvilodub" else {}
    human_n = check_same_n(items)

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


def _phenomena(names: list[str] | None) -> tuple[str, ...]:
    """The phenomena ``phenomenon_list`` accepted, in instance order (all of them for None)."""
    if names is None:
        return PHENOMENA
    return tuple(p for p in PHENOMENA if p in names)


# -------------------------------------------------------------------------------------------------- download


def _official_paths(root: Path, phenomena: tuple[str, ...], descriptions: str) -> list[Path]:
    """Every release file a ``hu`` load of these phenomena reads, so a download fetches those and no others."""
    paths = [path for p in phenomena for path in hu_paths(root, p, descriptions == "hu").values()]
    if descriptions == "tsvilodub":
        paths += [tsvilodub_path(root, p) for p in phenomena]
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
