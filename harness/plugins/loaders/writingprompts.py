"""WritingPrompts (Fan et al., 2018): story prompts with several human stories each, filtered as Giulianelli et al.
(2023) did.

The official release is ``writingPrompts.tar.gz`` (linked from fairseq's ``examples/stories/README.md``), whose
``writingPrompts/{train,valid,test}.wp_source`` (prompts) and ``.wp_target`` (stories) are aligned one pair per
line. Several lines share a prompt; grouping them gives a prompt with many human stories, which is what a
variability comparison needs. The grouping and filtering follow ``convert_writingprompts.py`` of
``dmg-illc/nlg-uncertainty-probes`` exactly, so that the ids and story lists are the ones that paper used:

1. read the two files line by line as aligned pairs and strip each line;
2. cut the first 7 characters of the prompt (the ``"[ WP ] "`` tag; a fixed cut, so ``[ IP ]``, ``[ EU ]`` and
   untagged prompts lose 7 characters too);
3. in each story, delete ``<newline>`` and collapse runs of whitespace to one space;
4. group stories by the processed prompt, skipping a story already in that prompt's list (exact duplicates);
5. keep prompts with at least ``min_stories`` stories (default 5); the id is the prompt's index among all unique
   prompts in order of first appearance, counted before filtering.

The recipe's output (JSON Lines ``{"id", "prompt", "stories"}``) is read too, with ``format: jsonl``; it gives the
same instances as the raw files (the tests check this on a fixture). Text is not changed beyond the recipe.

**This loader has not been run on the real data**: the release was not available where it was written, and it is
tested on a hand-made fixture only. For the same reason the download (``writingPrompts.tar.gz`` from
``dl.fbaipublicfiles.com``, tried when nothing is found and ``HARNESS_OFFLINE`` is not set) is tested only with a
fake opener serving a hand-made archive: it streams the archive to a temporary file beside the destination,
extracts only the requested split's two files, renames each into place atomically and deletes the archive.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from harness.api import (
    DataNotFoundError,
    GenerationInstance,
    HarnessError,
    Instance,
    LoadedData,
    Option,
    Options,
    check_no_nul,
    downloads_allowed,
    hash_files,
    one_of,
    optional,
    shorten_repr,
    takes_options,
)
from harness.plugins.loaders import downloads
from harness.plugins.loaders.option_types import count, file_name, folder
from harness.plugins.loaders.text_files import jsonl_records

LOADER = "writingprompts"
DEFAULT_PATH = "writingprompts"
#: The folder the release's tarball extracts to; accepted inside ``path`` (and at the data root by default).
OFFICIAL_DIR = "writingPrompts"
SPLITS = ("train", "valid", "test")
FORMATS = ("auto", "official", "jsonl")
DEFAULT_MIN_STORIES = 5
TAG_LENGTH = 7  # len("[ WP ] "), cut from every prompt as the recipe does

RELEASE_URL = "https://dl.fbaipublicfiles.com/fairseq/data/writingPrompts.tar.gz"
README_URL = "https://github.com/facebookresearch/fairseq/blob/main/examples/stories/README.md"
DOWNLOAD_TIMEOUT_S = 30.0  # per socket operation
DOWNLOAD_DEADLINE_S = 3600.0  # whole transfer; the archive is a few hundred MB
DOWNLOAD_MAX_BYTES = 4 * 1024**3

#: The ``data:`` options of a WritingPrompts task.
OPTIONS = Options(
    Option(
        "path",
        folder,
        None,
        f"folder under the data root (null: {DEFAULT_PATH}, also looking in {OFFICIAL_DIR}/ at the data root)",
        "str",
    ),
    Option("split", one_of(*SPLITS), "test", "which split", " | ".join(SPLITS)),
    Option("format", one_of(*FORMATS), "auto", "auto: the release, else jsonl, else a download", " | ".join(FORMATS)),
    Option(
        "min_stories", optional(count), DEFAULT_MIN_STORIES, "keep prompts with this many stories (null: 5)", "int >= 1"
    ),
    Option("max_stories", optional(count), None, "keep at most this many stories per prompt (null: all)", "int >= 1"),
    Option("file", file_name, None, "the JSONL file's name inside path (default writingprompts_{split}.jsonl)", "str"),
)


@takes_options(OPTIONS)
def load_writingprompts(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Load the prompts of one WritingPrompts split that have at least ``min_stories`` distinct human stories.

    Options: ``path`` (default ``writingprompts``); ``split`` (``test`` by default, ``valid``, ``train``);
    ``format`` (``auto``: the raw release files, then the JSONL, then a download; ``official``; ``jsonl``);
    ``min_stories`` (default 5, the paper's); ``max_stories`` (keep at most this many stories per prompt, the
    first in file order; applied after filtering, so it never changes which prompts are kept); ``file`` (the JSONL
    file's name inside ``path``, default ``writingprompts_{split}.jsonl``).

    The raw files are looked for in ``DATA/path/`` and ``DATA/path/writingPrompts/`` and, when ``path`` is not
    given, ``DATA/writingPrompts/`` (where extracting the tarball into the data root puts them).
    """
    split, fmt = options["split"], options["format"]
    min_stories: int = options["min_stories"] or DEFAULT_MIN_STORIES  # a given null is the default too
    max_stories: int | None = options["max_stories"]
    # No path given (null, which a task cannot give): the default folder, and the data root's writingPrompts/ too.
    path_given = options["path"] is not None
    sub: str = options["path"] if path_given else DEFAULT_PATH
    file_name: str = options["file"] or f"writingprompts_{split}.jsonl"
    root = data_dir / sub
    folders = [root, root / OFFICIAL_DIR] + ([] if path_given else [data_dir / OFFICIAL_DIR])
    pairs = [(folder / f"{split}.wp_source", folder / f"{split}.wp_target") for folder in folders]
    derived = root / file_name

    source_info: dict[str, Any] = {"dataset": "writingprompts", "split": split}
    files: list[Path] | None = None
    found = ""
    if fmt in ("auto", "official"):
        files = next((list(pair) for pair in pairs if pair[0].is_file() and pair[1].is_file()), None)
        if files is not None:
            found = "official"
    if files is None and fmt in ("auto", "jsonl") and derived.is_file():
        files, found = [derived], "jsonl"
    download_note = ""
    if files is None and fmt in ("auto", "official"):
        if downloads_allowed():
            try:
                files = list(_download_split(root, split))
                found = "official"
                source_info["downloaded_from"] = RELEASE_URL
            except (OSError, HarnessError, tarfile.TarError) as exc:  # urllib's errors are OSErrors
                download_note = f" Downloading {RELEASE_URL} failed ({downloads.one_line(exc)})."
        else:
            download_note = " Downloads are off (HARNESS_OFFLINE is set)."
    if files is None:
        looked = []
        if fmt in ("auto", "official"):
            also = f"{OFFICIAL_DIR}/" + ("" if path_given else f" and {data_dir / OFFICIAL_DIR}/")
            looked.append(f"{split}.wp_source + {split}.wp_target (there and in {also})")
        if fmt in ("auto", "jsonl"):
            looked.append(file_name)
        raise DataNotFoundError(
            f"WritingPrompts {split} data (format {fmt}) not found in {root}/: looked for {' and '.join(looked)}. "
            f"It is not included: extract {split}.wp_source and .wp_target of {RELEASE_URL} (Fan et al., 2018) "
            f"into DIR/{sub}/ and use --data-dir DIR or HARNESS_DATA_DIR=DIR, or run "
            "'harness data fetch writingprompts'." + download_note
        )

    prompts = _read_official(files[0], files[1], source_info) if found == "official" else _read_jsonl(files[0])
    kept = [(index, prompt, stories) for index, prompt, stories in prompts if len(stories) >= min_stories]
    if not kept:
        raise HarnessError(
            f"{LOADER}: no prompt has {min_stories} or more distinct stories in {', '.join(map(str, files))} "
            f"({len(prompts)} prompts; lower the data option min_stories?)"
        )
    instances: list[Instance] = [
        GenerationInstance(
            id=str(index),
            source=prompt,
            references=tuple(stories[:max_stories] if max_stories is not None else stories),
            language="en",
            meta={"prompt_index": index, "n_stories": len(stories)},
        )
        for index, prompt, stories in kept
    ]
    source_info.update(
        format=found,
        files=[str(p) for p in files],
        min_stories=min_stories,
        max_stories=max_stories,
        n_prompts_kept=len(instances),
        n_references_kept=sum(len(i.references) for i in instances if isinstance(i, GenerationInstance)),
    )
    return LoadedData(instances=instances, data_hash=hash_files(files), source=source_info)


# ------------------------------------------------------------------------------------------------------ readers

_Prompt = tuple[int, str, list[str]]  # index among all unique prompts, processed prompt, distinct stories


def _read_official(source_path: Path, target_path: Path, info: dict[str, Any]) -> list[_Prompt]:
    """Group the aligned pairs exactly as ``convert_writingprompts.py`` does (steps 1-4 of the module notes).

    The files are read in text mode with universal newlines, as the recipe's ``readlines()`` reads them, so that
    a stray carriage return splits a line here exactly where it split it there.
    """
    groups: dict[str, list[str]] = {}
    seen: dict[str, set[str]] = {}
    n_pairs = n_duplicates = 0
    sources, targets = _text_lines(source_path), _text_lines(target_path)
    for line_no, (prompt_line, story_line) in enumerate(itertools.zip_longest(sources, targets), start=1):
        if prompt_line is None or story_line is None:
            short, long_, rest = (
                (source_path, target_path, targets) if prompt_line is None else (target_path, source_path, sources)
            )
            n_long = line_no + sum(1 for _ in rest)
            raise HarnessError(
                f"{short}: {line_no - 1} lines, expected {n_long} like {long_.name} (prompts and stories are "
                f"aligned line by line)"
            )
        n_pairs += 1
        prompt = prompt_line.strip()[TAG_LENGTH:]
        story = " ".join(story_line.strip().replace("<newline>", "").split())
        stories = groups.setdefault(prompt, [])
        known = seen.setdefault(prompt, set())
        if story in known:
            n_duplicates += 1
            continue
        known.add(story)
        stories.append(story)
    info.update(
        n_pairs=n_pairs,
        n_unique_prompts=len(groups),
        n_distinct_stories=sum(len(s) for s in groups.values()),
        n_duplicate_stories_skipped=n_duplicates,
    )
    return [(index, prompt, stories) for index, (prompt, stories) in enumerate(groups.items())]


def _text_lines(path: Path) -> Iterator[str]:
    """The file's lines as ``readlines()`` gives them, streamed (the train split is large); a byte that is not
    UTF-8, or a NUL byte, is reported with its line and byte offset (``harness.files.decode_utf8``'s wording)."""
    try:
        with path.open(encoding="utf-8") as handle:
            try:
                for line in handle:
                    if "\x00" in line:
                        break
                    yield line
                else:
                    return
            except UnicodeDecodeError:
                pass
        _raise_at_first_bad_byte(path)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the data file ({exc.strerror or type(exc).__name__})") from None


def _raise_at_first_bad_byte(path: Path) -> None:
    """Only on error: find the exact line and byte offset, which text-mode chunking hides."""
    offset = 0
    with path.open("rb") as raw:
        for line_no, line in enumerate(raw, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise HarnessError(
                    f"{path}: line {line_no}: not valid UTF-8 ({exc.reason} at byte offset {offset + exc.start})"
                ) from None
            check_no_nul(line, path, line_no, offset)
            offset += len(line)
    raise HarnessError(f"{path}: not valid UTF-8")


def _read_jsonl(path: Path) -> list[_Prompt]:
    """The recipe's output. Text is taken as written (the recipe already processed it); ids must be unique."""
    prompts: list[_Prompt] = []
    for where, record in jsonl_records(path, _text_lines(path), ("id", "prompt", "stories")):
        index = record["id"]
        if not isinstance(record["prompt"], str):
            raise HarnessError(f"{where}: field 'prompt': expected a string, got {shorten_repr(record['prompt'], 60)}")
        stories = record["stories"]
        if not isinstance(stories, list) or not stories:
            raise HarnessError(
                f"{where}: field 'stories': expected a non-empty list of strings, got {shorten_repr(stories, 60)}"
            )
        for k, story in enumerate(stories):
            if not isinstance(story, str):
                raise HarnessError(f"{where}: field 'stories[{k}]': expected a string, got {shorten_repr(story, 60)}")
        prompts.append((index, record["prompt"], list(stories)))
    return prompts


# ---------------------------------------------------------------------------------------------------- download


def _open_url(url: str, timeout: float) -> BinaryIO:
    """Open ``url`` for reading; a seam so tests can serve bytes without a network."""
    return downloads.open_url(url, timeout, "variability-harness (writingprompts loader)")


def _download_split(root: Path, split: str) -> tuple[Path, Path]:
    """Fetch the release and extract ``{split}.wp_source`` and ``{split}.wp_target`` into ``root/writingPrompts``.

    The archive is streamed to a temporary file (it is too large to hold in memory), read once as a stream, and
    deleted; each extracted file is written under a temporary name and renamed into place only after both were
    read in full, the stories first, so a failed download never leaves a prompts file the loader would pair with
    nothing. Members are matched by exact name, never extracted by their own paths.
    """
    dest = root / OFFICIAL_DIR
    dest.mkdir(parents=True, exist_ok=True)
    names = (f"{split}.wp_target", f"{split}.wp_source")
    archive_path: Path | None = None
    parts: dict[str, Path] = {}
    try:
        archive_path = downloads.fetch_to_temp(
            RELEASE_URL,
            dest,
            opener=_open_url,
            timeout=DOWNLOAD_TIMEOUT_S,
            max_bytes=DOWNLOAD_MAX_BYTES,
            deadline=downloads.Deadline.after(DOWNLOAD_DEADLINE_S),
            what="the WritingPrompts archive",
            prefix=".writingprompts-download-",
            chunk_size=1 << 20,
        )
        with archive_path.open("rb") as handle, tarfile.open(fileobj=handle, mode="r|*") as archive:
            for member in archive:
                parts_of_name = PurePosixPath(member.name).parts
                name = parts_of_name[-1] if parts_of_name else ""
                if name not in names or name in parts or not member.isfile():
                    continue
                if [p for p in parts_of_name[:-1] if p != "."] not in ([], [OFFICIAL_DIR]):
                    continue
                extracted = archive.extractfile(member)
                if extracted is None:
                    continue
                part_fd, part_name = tempfile.mkstemp(prefix=f".{name}-", suffix=".part", dir=dest)
                parts[name] = Path(part_name)
                with os.fdopen(part_fd, "wb") as out, extracted:
                    shutil.copyfileobj(extracted, out, 1 << 20)
                if len(parts) == len(names):
                    break
        missing = [n for n in names if n not in parts]
        if missing:
            raise HarnessError(f"the archive has no {OFFICIAL_DIR}/{missing[0]}")
        for name in names:
            os.replace(parts[name], dest / name)
    except BaseException:
        for part in parts.values():
            part.unlink(missing_ok=True)
        raise
    finally:
        if archive_path is not None:
            archive_path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            dest.rmdir()  # only succeeds if the download left the folder empty
    return dest / names[1], dest / names[0]
