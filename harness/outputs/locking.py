"""One process at a time per output folder: a second ``harness`` on the same folder refuses, naming the holder.

Why refuse rather than wait: two runs of one command into one folder would compute the same instances twice and
append duplicate records to the response store; a run that waits silently for hours looks hung. The lock is an
``flock`` on ``<folder>/.harness.lock``, so the kernel releases it when its holder dies (even by SIGKILL) and a
stale lock file never blocks anyone. The file records the holder's pid, command and start time for the message.
On systems without ``fcntl`` (Windows) no lock is taken.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from types import TracebackType

from harness.errors import HarnessError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".harness.lock"


class OutputLock:
    """``with OutputLock(folder):`` holds the folder for this process; re-entering in the same process is fine."""

    _held: dict[Path, int] = {}

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self.fd: int | None = None

    def __enter__(self) -> OutputLock:
        if fcntl is None or self.folder in OutputLock._held:
            return self
        path = self.folder / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise HarnessError(f"{path}: cannot create the lock file ({exc.strerror or exc})") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            holder = _describe_holder(fd)
            os.close(fd)
            raise HarnessError(
                f"{self.folder}: in use by another harness process ({holder}); wait for it to finish or use "
                "another --output-dir"
            ) from exc
        info = {
            "pid": os.getpid(),
            "command": " ".join(["harness", *sys.argv[1:]])[:300],
            "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self.fd = fd
        OutputLock._held[self.folder] = fd
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.fd is None:
            return
        OutputLock._held.pop(self.folder, None)
        try:
            os.ftruncate(self.fd, 0)
        finally:
            os.close(self.fd)  # closing releases the flock
            self.fd = None


def _describe_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "pid unknown"
    return f"pid {info['pid']}, since {info.get('since', '?')}: {info.get('command', '?')}"
