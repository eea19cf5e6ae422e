"""One malformed-input case, and helpers the case modules share to build them."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

#: The repository's small test fixtures (data sets of a few instances each).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: One step of a case's setup under its temporary folder (what it returns is ignored).
Step = Callable[[Path], object]


@dataclass(frozen=True)
class Case:
    """A command that must fail with one line naming the culprit.

    ``argv`` are ``harness`` arguments in which ``{tmp}`` is replaced by the case's temporary folder and ``{data}`` by
    the shared data root; ``files`` (relative path -> content) are written under ``{tmp}`` and ``prepare`` is called
    with ``{tmp}`` before the command runs; the bytes of the files matching ``protect`` (globs under ``{tmp}``) must
    be unchanged after it.
    """

    id: str
    argv: tuple[str, ...]
    expect: str
    files: Mapping[str, bytes | str] = field(default_factory=lambda: MappingProxyType({}))
    prepare: Callable[[Path], None] | None = None
    protect: tuple[str, ...] = ()

    def set_up(self, tmp: Path) -> None:
        """Write the case's ``files`` under ``tmp``, then run its ``prepare``."""
        for relative, content in self.files.items():
            path = tmp / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode() if isinstance(content, str) else content)
        if self.prepare is not None:
            self.prepare(tmp)

    def arguments(self, tmp: Path, data: Path) -> list[str]:
        """``argv`` with ``{tmp}`` and ``{data}`` filled in."""
        return [arg.replace("{tmp}", str(tmp)).replace("{data}", str(data)) for arg in self.argv]

    def protected(self, tmp: Path) -> dict[str, bytes]:
        """The bytes of every file under ``tmp`` that ``protect`` matches, by relative path."""
        return {
            str(p.relative_to(tmp)): p.read_bytes() for g in self.protect for p in sorted(tmp.glob(g)) if p.is_file()
        }


def copy_fixture(name: str, to: str = "data") -> Callable[[Path], None]:
    """A ``prepare`` that copies ``tests/fixtures/<name>/`` into ``{tmp}/<to>/``."""

    def prepare(tmp: Path) -> None:
        shutil.copytree(FIXTURES / name, tmp / to, dirs_exist_ok=True)

    return prepare


def then(*steps: Step) -> Callable[[Path], None]:
    """A ``prepare`` doing ``steps`` in order (copy a fixture, then damage one file)."""

    def prepare(tmp: Path) -> None:
        for step in steps:
            step(tmp)

    return prepare


def replace_bytes(relative: str, old: bytes, new: bytes, count: int = 1) -> Callable[[Path], None]:
    """A ``prepare`` step replacing ``old`` by ``new`` in ``{tmp}/<relative>`` (which must contain it)."""

    def step(tmp: Path) -> None:
        path = tmp / relative
        data = path.read_bytes()
        if old not in data:
            raise AssertionError(f"{path} does not contain {old!r}: the fixture changed, fix the case")
        path.write_bytes(data.replace(old, new, count))

    return step


def write_bytes(relative: str, data: bytes | str) -> Callable[[Path], None]:
    """A ``prepare`` step (re)writing ``{tmp}/<relative>``."""

    def step(tmp: Path) -> None:
        path = tmp / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)

    return step


def make_dir(relative: str) -> Callable[[Path], None]:
    """A ``prepare`` step making a folder where a file is expected (an existing file is removed first)."""

    def step(tmp: Path) -> None:
        path = tmp / relative
        if path.is_file():
            path.unlink()
        path.mkdir(parents=True, exist_ok=True)

    return step


def yaml_text(fields: Mapping[str, str]) -> str:
    """A task file from ``field: value`` lines, the values written as given (YAML flow style)."""
    return "".join(f"{key}: {value}\n" for key, value in fields.items())
