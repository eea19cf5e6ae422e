"""Where data sets live, and what a loader returns.

Order of precedence for the data root: ``--data-dir``, then ``HARNESS_DATA_DIR``, then a per-user cache directory
(where loaders that can download an official release put it).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import platformdirs

from harness.errors import HarnessError, shorten
from harness.instances import Instance
from harness.options import Options

DATA_DIR_ENV = "HARNESS_DATA_DIR"
OFFLINE_ENV = "HARNESS_OFFLINE"


@dataclass
class LoadedData:
    """Instances in data-set order, with a hash of the exact files read (recorded in results for comparability)."""

    #: The items, in the data set's order (``--limit N`` keeps the first N): at least one, ids unique, each of the
    #: instance type the task's request kind reads (``ClozeInstance`` for ``sample_words``, ...).
    instances: list[Instance]
    #: ``harness.api.hash_files`` of every file read (``sha256:...``): results.json keeps it per task, and
    #: ``harness score`` refuses to re-score a run whose data now hashes differently.
    data_hash: str
    #: Human-readable description of what was read (paths, format), for results.json. Give ``files`` (the paths
    #: read) or ``path`` (the folder): the error when no instance was found names them.
    source: dict[str, Any] = field(default_factory=dict)


class Loader(Protocol):
    """A data loader: ``options`` is the task YAML's ``data`` mapping, as ``takes_options`` hands it on (checked,
    converted and with every declared option present, at its default when not given); ``data_dir`` the resolved
    data root."""

    def __call__(self, options: Mapping[str, Any], data_dir: Path) -> LoadedData: ...


#: ``check_data(options, data_dir)``: read the first rows of a task's data and return a one-line summary, or raise
#: a ``HarnessError`` naming the file, row and field (what ``harness validate`` runs for a loader that has one). A
#: check that also takes ``prepare=`` (a function of the ``LoadedData`` it read) passes its first rows' instances
#: through it: ``validate`` gives the task's request kind's ``prepare_data`` (the word rule), as a run does.
DataCheck = Callable[..., str]


def takes_options(
    options: Options, *, name: str | None = None, check_data: DataCheck | None = None
) -> Callable[[Callable[[Mapping[str, Any], Path], LoadedData]], Loader]:
    """Declare a loader's options and check them before it runs.

    The decorated loader has ``options`` (for ``harness ls loaders --options``); when called, it first checks the
    given mapping with ``options.parse`` (an unknown key or a bad value is a one-line ``OptionError`` naming the
    option, ``data options of loader 'provo': unknown option 'text_id' (accepted: ...)``), then calls the loader
    with what ``parse`` returned: every declared option, converted, the ones not given at their declared default.
    The loader reads ``options["name"]`` and repeats neither defaults nor checks, so the default ``harness ls
    loaders --options`` shows is the one the loader uses. ``name`` is the loader's name in messages (default: the
    function's name without ``load_``)::

        @takes_options(Options(Option("path", text, "provo", "folder under the data root")))
        def load_provo(options, data_dir):
            root = data_dir / options["path"]  # "provo" when the task gives no path

    ``check_data``, when given, is what ``harness validate`` runs on the task's data (its first rows): loaders of
    users' own data sets use it so that a mapping is checked before a run.
    """

    declared = options

    def decorate(loader: Callable[[Mapping[str, Any], Path], LoadedData]) -> Loader:
        where = f"data options of loader '{name or loader.__name__.removeprefix('load_')}'"

        def checked(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
            if not isinstance(options, Mapping):
                raise HarnessError(f"{where}: expected a mapping of options, got {shorten(options)}")
            loaded = loader(declared.parse(options, where), data_dir)
            if not loaded.instances:
                raise HarnessError(f"{where}: found no instances in {_read_from(loaded, data_dir)}")
            return loaded

        functools.update_wrapper(checked, loader)
        checked.options = declared  # type: ignore[attr-defined]
        checked.check_data = check_data  # type: ignore[attr-defined]
        return checked

    return decorate


def _read_from(loaded: LoadedData, data_dir: Path) -> str:
    """What a loader read, for the message when it found nothing: its files (the first three), else its folder."""
    files = [str(f) for f in loaded.source.get("files") or []]
    if files:
        return ", ".join(files[:3]) + (f" and {len(files) - 3} more files" if len(files) > 3 else "")
    return str(loaded.source.get("path") or data_dir)


def default_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("harness"))


def resolve_data_dir(cli_value: str | None) -> tuple[Path, str]:
    """The data root and how it was chosen (``--data-dir``, the environment, or the cache default)."""
    if cli_value is not None:
        return _data_root(cli_value, "--data-dir"), "--data-dir"
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return _data_root(env, DATA_DIR_ENV), DATA_DIR_ENV
    return default_cache_dir() / "data", "default cache directory"


def _data_root(value: str, where: str) -> Path:
    """A data root given by the user: a path that is not empty and, if it exists, a folder."""
    if not value.strip():
        raise HarnessError(f"{where}: expected a folder, got an empty path")
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise HarnessError(f"{where}: {path} is a file, expected the folder that holds the data sets")
    return path


def downloads_allowed() -> bool:
    """Loaders may fetch official releases unless the user (or CI) set ``HARNESS_OFFLINE=1``."""
    return os.environ.get(OFFLINE_ENV, "").lower() not in ("1", "true", "yes")


def hash_files(paths: Iterable[Path]) -> str:
    """sha256 over the files' names and bytes, in sorted order, so the hash names the exact data evaluated."""
    digest = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        digest.update(path.name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return "sha256:" + digest.hexdigest()
