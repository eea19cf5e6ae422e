"""Where a data path written in a task file points: the one place that reads one.

A path has one of three forms:

* ``task:PATH``: relative to the folder of the task file being loaded, so that a task file and its data travel
  together (a plugin package, a study's folder of tasks);
* ``package:PACKAGE/PATH``: a file inside an installed Python package (``importlib.resources.files(PACKAGE) /
  PATH``), so that a plugin's task reads the data the plugin ships wherever pip put it;
* anything else: under the data root (``--data-dir``, ``HARNESS_DATA_DIR``), or absolute, or ``~``.

Why a context variable for the task file: a loader is called as ``loader(options, data_dir)`` (the plugin API),
which has no room for the task file. The harness sets it around every loader call (``naming_task_file`` in
``harness.registry.task_loading``), so a loader that reads its paths here gets ``task:`` without a new argument, and one
called on its own (a test, a script) gets a clear error rather than a guess at some folder.

A file is read where it lies on disk, so the data's hash is of the bytes read and the data source record lists the
file itself; a package installed zipped has no files on disk and is refused, as is a path that leaves its package.
"""

from __future__ import annotations

import contextlib
import glob
import re
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from harness.errors import DataNotFoundError, HarnessError

TASK_PREFIX = "task:"
PACKAGE_PREFIX = "package:"
#: A dotted package name, as ``import`` takes it.
_PACKAGE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

#: The task file being loaded (absolute), or None where no task file is (a loader called directly).
_TASK_FILE: ContextVar[Path | None] = ContextVar("harness_task_file", default=None)


@contextlib.contextmanager
def reading_task_file(path: str | Path | None) -> Iterator[None]:
    """Inside, ``task:`` paths are relative to ``path``'s folder; None: there is no task file (``task:`` refused)."""
    token = _TASK_FILE.set(None if path is None else Path(path).absolute())
    try:
        yield
    finally:
        _TASK_FILE.reset(token)


def current_task_file() -> Path | None:
    """The task file being loaded, if any."""
    return _TASK_FILE.get()


def resolve_data_paths(given: Iterable[str], data_dir: Path, option: str) -> list[Path]:
    """Each path of a data option (``option`` names it in errors), its glob (``*``, ``?``, ``[...]``, ``**``)
    expanded in sorted order; each must name a file. A plain path is under ``data_dir`` (or absolute, or ``~``);
    ``task:PATH`` is beside the task file being loaded; ``package:PKG/PATH`` is inside an installed package. A
    plugin's own loader calls it (``harness.api``) so its path options read as the generic loaders' do."""
    found: list[Path] = []
    for text in given:
        where = _where(text, data_dir, option)
        if glob.has_magic(where.relative):
            # Only the part the user wrote is a pattern: a data root or an install folder named ``[x]`` is not.
            matched = glob.glob(where.relative, root_dir=where.base, recursive=True)
            files = sorted(p for p in (where.base / m for m in matched) if p.is_file())
            if not files:
                raise DataNotFoundError(f"data option '{option}': no file matches {where.path}{where.hint}")
            found.extend(files)
        else:
            found.append(_existing(where, option))
    return found


def resolve_data_file(text: str, data_dir: Path, option: str) -> Path:
    """One file, its name read as written (no glob): a replacements file."""
    return _existing(_where(text, data_dir, option), option)


class _Where(NamedTuple):
    """A path as the folder it is relative to and the part the user wrote after it."""

    base: Path
    relative: str
    #: Where paths of this form are looked for, for a not-found error.
    hint: str

    @property
    def path(self) -> Path:
        return self.base / self.relative


def _existing(where: _Where, option: str) -> Path:
    if not where.path.is_file():
        raise DataNotFoundError(f"data option '{option}': {where.path} not found{where.hint}")
    return where.path


def _where(text: str, data_dir: Path, option: str) -> _Where:
    if text.startswith(TASK_PREFIX):
        relative = _relative(text, text[len(TASK_PREFIX) :], option, "task:PATH, relative to the task file")
        task_file = current_task_file()
        if task_file is None:
            raise HarnessError(
                f"data option '{option}': {text}: a task: path is relative to the task file being read, and there "
                "is none here (a loader called directly, or a configuration read back from a run's results)"
            )
        base = task_file.parent
        return _Where(base, relative, f" (task: paths are relative to the task file's folder, {base})")
    if text.startswith(PACKAGE_PREFIX):
        root, relative = _in_package(text, option)
        hint = f" (inside package {text[len(PACKAGE_PREFIX) :].partition('/')[0]!r} at {root}: is it package-data?)"
        return _Where(root, relative, hint)
    path = Path(text).expanduser()
    if path.is_absolute():
        return _Where(Path(path.anchor), str(path.relative_to(path.anchor)), "")
    hint = f" (paths are under the data root {data_dir}: --data-dir DIR or HARNESS_DATA_DIR=DIR)"
    return _Where(data_dir, text, hint)


def _relative(text: str, rest: str, option: str, form: str) -> str:
    if not rest.strip() or PurePosixPath(rest).is_absolute() or Path(rest).is_absolute():
        raise HarnessError(f"data option '{option}': {text!r}: expected {form} (a relative path after the prefix)")
    return rest


def _in_package(text: str, option: str) -> tuple[Path, str]:
    """``package:NAME/PATH``: the package's folder on disk and ``PATH``."""
    form = "package:PACKAGE/PATH, a file inside an installed Python package"
    name, _, rest = text[len(PACKAGE_PREFIX) :].partition("/")
    if not _PACKAGE_NAME.match(name):
        raise HarnessError(f"data option '{option}': {text!r}: expected {form} (no package name before the '/')")
    relative = _relative(text, rest, option, form)
    if ".." in PurePosixPath(relative).parts:
        raise HarnessError(f"data option '{option}': {text!r}: '..' leaves the package; name a file inside it")
    try:
        root = resources.files(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise DataNotFoundError(
                f"data option '{option}': {text}: no package '{name}' is installed (pip install the plugin "
                "that ships it)"
            ) from None
        raise HarnessError(f"data option '{option}': {text}: importing package '{name}' failed: {exc}") from None
    except Exception as exc:  # a module that is not a package, or a package whose import fails
        raise HarnessError(f"data option '{option}': {text}: package '{name}': {type(exc).__name__}: {exc}") from None
    if not isinstance(root, Path):
        raise HarnessError(
            f"data option '{option}': {text}: package '{name}' has no folder of files on disk (installed zipped, or "
            "a namespace package); package: paths read files, so install it unzipped"
        )
    return root, relative
