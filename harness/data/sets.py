"""Data sets as files with pinned checksums: what ``harness data list|fetch|verify`` reads and does.

A :class:`DataSet` names the files a loader reads, each a :class:`DataFile` with its path under the data root, the
official address it is downloaded from and, where one could be pinned, its SHA-256 and size. Plugins register
data sets through the ``register_data_sets`` hook; the built-in ones are in ``plugins/loaders/catalog.py``.

Fetching is all or nothing per data set: every missing file is streamed to a temporary file in its folder
(:mod:`harness.data.downloads`), checked against its pinned SHA-256 and size (or, for a file with no pinned checksum,
against the data set's ``check``), and only when every file has arrived and passed are they renamed into place.
A failure removes the temporary files and the folders the fetch made, and is one line naming the file, the URL
and what happened. A file with no pinned checksum is never called verified.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from harness.data import downloads
from harness.data.loaders import OFFLINE_ENV, downloads_allowed
from harness.errors import HarnessError

USER_AGENT = "variability-harness (harness data fetch)"
TIMEOUT_S = 30.0  # per socket operation
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class DataFile:
    """One file of a data set."""

    #: Where it goes, relative to the data root, with ``/`` separators (``asset/dataset/asset.valid.orig``): the
    #: path the data set's loader reads with its default options.
    path: str
    #: The official address it is downloaded from (for a file extracted from an archive, the archive's).
    url: str
    #: Its SHA-256 (64 lower-case hex digits), or None where none could be pinned: then it is never "verified".
    sha256: str | None = None
    #: Its size in bytes, or None where it is not known.
    size: int | None = None


@dataclass(frozen=True)
class DataSet:
    """A data set: where it comes from, under what terms, and the files its loader reads."""

    #: The name ``harness data fetch NAME`` takes (the folder name under the data root, by convention).
    name: str
    #: One line saying what it is (authors, year).
    title: str
    #: The official source: the repository and commit, or the official URL.
    source: str
    #: Its license as the source states it (or that none is stated).
    license: str
    #: The files the loader reads, at least one.
    files: tuple[DataFile, ...]
    #: What the harness cannot promise about it (no pinned checksum, only part of a release, ...), for ``list``.
    note: str = ""
    #: Accepts or rejects (by raising) a downloaded file that has no pinned checksum, e.g. by its header.
    check: Callable[[Path], None] | None = field(default=None, compare=False)
    #: A download that is not one request per file (an archive to extract): called with the data root, it puts
    #: the files in place (each atomically) or raises; their checksums are then checked as for any fetch.
    fetcher: Callable[[Path], object] | None = field(default=None, compare=False)
    #: Paths of derived copies the loader reads instead of the official files (shown by ``list``, never checked).
    derived: tuple[str, ...] = ()
    #: Cap on the bytes of one file whose size is not pinned.
    max_bytes: int = 1 << 30
    #: Deadline, in seconds, for fetching all its files.
    deadline_s: float = 900.0

    def __post_init__(self) -> None:
        where = f"data set {self.name!r}"
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", self.name):
            raise HarnessError(f"{where}: a name is letters, digits, '.', '_' and '-' (not 'all')")
        if self.name == "all" or not self.files:
            raise HarnessError(f"{where}: " + ("'all' is reserved" if self.name == "all" else "lists no files"))
        for f in self.files:
            parts = PurePosixPath(f.path).parts
            if not parts or PurePosixPath(f.path).is_absolute() or ".." in parts or "\\" in f.path:
                raise HarnessError(f"{where}: file path {f.path!r} is not a relative path under the data root")
            if f.sha256 is not None and not _SHA256.fullmatch(f.sha256):
                raise HarnessError(f"{where}: {f.path}: sha256 {f.sha256!r} is not 64 lower-case hex digits")

    @property
    def pinned(self) -> bool:
        """Whether every file has a pinned SHA-256 (``fetch all`` fetches only these)."""
        return all(f.sha256 is not None for f in self.files)

    @property
    def size(self) -> int | None:
        """The bytes of all its files, where every size is known."""
        sizes = [f.size for f in self.files]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)

    def folder(self, root: Path) -> Path:
        """The folder under ``root`` that holds its files (their longest common parent)."""
        common = os.path.commonpath([PurePosixPath(f.path).parent.as_posix() for f in self.files])
        return root / common if common else root


@dataclass(frozen=True)
class FileCheck:
    """One file checked on disk: ``verified``, ``missing``, ``mismatch`` or ``unpinned`` (present, no checksum)."""

    file: DataFile
    state: str
    #: For ``mismatch`` what differs; for ``unpinned`` and ``verified`` the SHA-256 found.
    detail: str = ""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _compare(file: DataFile, path: Path) -> FileCheck:
    """``path`` (the file on disk, or a download of it) against what is pinned for ``file``."""
    got = sha256_file(path)
    if file.sha256 is None:
        return FileCheck(file, "unpinned", got)
    if got == file.sha256:
        return FileCheck(file, "verified", got)
    size = path.stat().st_size
    sizes = f"{size} bytes, pinned {file.size}; " if file.size is not None and size != file.size else ""
    return FileCheck(file, "mismatch", f"{sizes}SHA-256 {got}, pinned {file.sha256}")


def check_files(data_set: DataSet, root: Path) -> list[FileCheck]:
    """Every file of ``data_set`` under ``root``, checked against its pinned SHA-256."""
    out = []
    for file in data_set.files:
        path = root / file.path
        out.append(_compare(file, path) if path.is_file() else FileCheck(file, "missing"))
    return out


def status(data_set: DataSet, checks: list[FileCheck], root: Path) -> str:
    """One word or phrase for ``list``: verified, absent, derived copy only, incomplete, FAILED or unverified."""
    states = {c.state for c in checks}
    if "mismatch" in states:
        return "FAILED"
    if states == {"missing"}:
        return "derived copy only" if any((root / d).is_file() for d in data_set.derived) else "absent"
    if "missing" in states:
        return "incomplete"
    return "verified" if states == {"verified"} else "present, unverified"


def problems(checks: list[FileCheck], root: Path) -> list[str]:
    """One line per file that is missing or differs from its pinned checksum (all missing is not a problem here:
    the caller decides whether an absent data set is one)."""
    if all(c.state == "missing" for c in checks):
        return []
    lines = []
    for c in checks:
        if c.state == "missing":
            lines.append(f"{root / c.file.path}: missing")
        elif c.state == "mismatch":
            lines.append(f"{root / c.file.path}: not the pinned file ({c.detail})")
    return lines


# ---------------------------------------------------------------------------------------------------- fetching


class FetchError(HarnessError):
    """A fetch failed and left nothing behind; ``unreachable`` when the server could not be reached at all."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


@dataclass
class FetchResult:
    """What a fetch did: the files it fetched (with their SHA-256) and the ones that were already there."""

    data_set: DataSet
    root: Path
    fetched: list[FileCheck]
    kept: list[FileCheck]

    def line(self) -> str:
        """One line for the user; a file with no pinned checksum is said to be unverified, with the SHA-256 got."""
        ds, where = self.data_set, self.data_set.folder(self.root)
        unpinned = [c for c in self.fetched + self.kept if c.state == "unpinned"]
        sums = "; ".join(f"{PurePosixPath(c.file.path).name} SHA-256 {c.detail}" for c in unpinned)
        not_verified = f"; NOT verified: no SHA-256 is pinned for it ({sums})" if unpinned else ""
        if not self.fetched:
            verified = "and verified " if not unpinned else ""
            return f"{ds.name}: already present {verified}({_files(len(self.kept))}) in {where}{not_verified}"
        size = sum((self.root / c.file.path).stat().st_size for c in self.fetched)
        urls = sorted({c.file.url for c in self.fetched})
        origin = urls[0] if len(urls) == 1 else ds.source
        mirror = downloads.mirror_base()
        origin += f" (through the mirror {mirror})" if mirror else ""
        checked = ", SHA-256 verified," if not unpinned else ""
        kept = f"; {_files(len(self.kept))} already present" if self.kept else ""
        return (
            f"{ds.name}: fetched {_files(len(self.fetched))} ({size:,} bytes) from {origin}{checked} into {where}"
            f"{kept}{not_verified}"
        )


def _files(n: int) -> str:
    return f"{n} file" + ("" if n == 1 else "s")


def default_opener(url: str, timeout: float) -> BinaryIO:
    return downloads.open_url(url, timeout, USER_AGENT)


def offline_message() -> str:
    return f"downloads are off ({OFFLINE_ENV} is set): nothing was fetched; unset it to download"


def fetch(
    data_set: DataSet,
    root: Path,
    *,
    force: bool = False,
    opener: downloads.Opener | None = None,
    timeout: float = TIMEOUT_S,
) -> FetchResult:
    """Fetch the files of ``data_set`` that are missing under ``root`` (and, with ``force``, those that differ from
    their pinned checksum); all or nothing. Raises :class:`FetchError` (one line) when anything fails."""
    if not downloads_allowed():
        raise FetchError(f"{data_set.name}: {offline_message()}")
    checks = check_files(data_set, root)
    wrong = [c for c in checks if c.state == "mismatch"]
    if wrong and not force:
        raise FetchError(
            f"{data_set.name}: {root / wrong[0].file.path} is present but is not the pinned file "
            f"({wrong[0].detail}); nothing was fetched (--force replaces it)"
        )
    wanted = [c.file for c in checks if c.state == "missing" or (force and c.state == "mismatch")]
    kept = [c for c in checks if c.file not in wanted]
    if not wanted:
        return FetchResult(data_set, root, [], kept)
    created = _missing_folders(root, wanted)
    try:
        if data_set.fetcher is not None:
            fetched = _run_fetcher(data_set, root, wanted)
        else:
            fetched = _fetch_files(data_set, root, wanted, opener or default_opener, timeout)
    except BaseException:
        for folder in created:  # deepest first; a folder that holds anything stays
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return FetchResult(data_set, root, fetched, kept)


def _missing_folders(root: Path, files: list[DataFile]) -> list[Path]:
    """The folders (the data root included) that fetching ``files`` would create, deepest first."""
    folders: set[Path] = set()
    for file in files:
        for folder in [(root / file.path).parent, *(root / file.path).parent.parents]:
            if not folder.exists():
                folders.add(folder)
    return sorted(folders, key=lambda p: len(p.parts), reverse=True)


def _failure(data_set: DataSet, file: DataFile, exc: BaseException) -> FetchError:
    reason = downloads.describe(exc)
    return FetchError(
        f"{data_set.name}: {file.path}: {reason} (from {downloads.mirrored(file.url)}); nothing was written",
        unreachable=downloads.unreachable(exc),
    )


def _fetch_files(
    data_set: DataSet, root: Path, wanted: list[DataFile], opener: downloads.Opener, timeout: float
) -> list[FileCheck]:
    """One request per file, each to a temporary file; renamed into place only when all have arrived and passed."""
    deadline = downloads.Deadline.after(data_set.deadline_s)
    arrived: list[tuple[Path, FileCheck]] = []
    try:
        for file in wanted:
            dest = root / file.path
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                tmp = downloads.fetch_to_temp(
                    file.url,
                    dest.parent,
                    opener=opener,
                    timeout=timeout,
                    max_bytes=file.size if file.size is not None else data_set.max_bytes,
                    deadline=deadline,
                    what=f"the pinned {PurePosixPath(file.path).name}",
                    prefix=f".{dest.name}-",
                )
            except downloads.TRANSFER_ERRORS as exc:
                raise _failure(data_set, file, exc) from None
            arrived.append((tmp, _compare(file, tmp)))
            result = arrived[-1][1]
            if result.state == "mismatch":
                raise _failure(data_set, file, HarnessError(f"checksum mismatch: {result.detail}"))
            if result.state == "unpinned" and data_set.check is not None:
                try:
                    data_set.check(tmp)
                except HarnessError as exc:
                    raise _failure(data_set, file, exc) from None
        for tmp, result in arrived:
            os.replace(tmp, root / result.file.path)
    except BaseException:
        for tmp, _ in arrived:
            tmp.unlink(missing_ok=True)
        raise
    return [result for _, result in arrived]


def _run_fetcher(data_set: DataSet, root: Path, wanted: list[DataFile]) -> list[FileCheck]:
    """A data set's own download (an archive); what it placed is then checked like any fetched file, and a file
    that fails its pinned checksum is removed again."""
    assert data_set.fetcher is not None
    try:
        data_set.fetcher(root)
    except Exception as exc:  # a transfer error, an archive that is not one (tarfile.TarError), ...
        raise _failure(data_set, wanted[0], exc) from None
    results = [check_files(data_set, root)[data_set.files.index(f)] for f in wanted]
    bad = [r for r in results if r.state not in ("verified", "unpinned")]
    if bad:
        for r in results:  # all or nothing: what it did place goes too
            (root / r.file.path).unlink(missing_ok=True)
        state = bad[0]
        reason = "not in what was downloaded" if state.state == "missing" else f"checksum mismatch: {state.detail}"
        raise _failure(data_set, state.file, HarnessError(reason))
    return results
