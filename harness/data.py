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

from harness.instances import Instance
from harness.options import Options

DATA_DIR_ENV = "HARNESS_DATA_DIR"
OFFLINE_ENV = "HARNESS_OFFLINE"


@dataclass
class LoadedData:
    """Instances in data-set order, with a hash of the exact files read (recorded in results for comparability)."""

    instances: list[Instance]
    data_hash: str
    #: Human-readable description of what was read (paths, format), for results.json.
    source: dict[str, Any] = field(default_factory=dict)


class Loader(Protocol):
    """A data loader: ``options`` is the task YAML's ``data`` mapping; ``data_dir`` the resolved data root."""

    def __call__(self, options: Mapping[str, Any], data_dir: Path) -> LoadedData: ...


def takes_options(
    options: Options, *, name: str | None = None
) -> Callable[[Callable[[Mapping[str, Any], Path], LoadedData]], Loader]:
    """Declare a loader's options and check them before it runs.

    The decorated loader has ``options`` (for ``harness ls loaders --options``); when called, it first checks the
    given mapping with ``options.parse`` (an unknown key or a bad value is a one-line ``OptionError`` naming the
    option, ``data options of loader 'provo': unknown option 'text_id' (accepted: ...)``), then calls the loader
    with the mapping as given, so the loader applies its own defaults and records what it was given. ``name`` is
    the loader's name in messages (default: the function's name without ``load_``)::

        @takes_options(Options(Option("path", text, "provo", "folder under the data root")))
        def load_provo(options, data_dir): ...
    """

    declared = options

    def decorate(loader: Callable[[Mapping[str, Any], Path], LoadedData]) -> Loader:
        where = f"data options of loader '{name or loader.__name__.removeprefix('load_')}'"

        def checked(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
            declared.parse(options, where)
            return loader(options, data_dir)

        functools.update_wrapper(checked, loader)
        checked.options = declared  # type: ignore[attr-defined]
        return checked

    return decorate


def default_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("harness"))


def resolve_data_dir(cli_value: str | None) -> tuple[Path, str]:
    """The data root and how it was chosen (``--data-dir``, the environment, or the cache default)."""
    if cli_value:
        return Path(cli_value).expanduser(), "--data-dir"
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser(), DATA_DIR_ENV
    return default_cache_dir() / "data", "default cache directory"


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
