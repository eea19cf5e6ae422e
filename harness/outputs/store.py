"""An append-only store of model responses, written as they arrive so a killed run loses nothing finished.

One JSON line per answered instance, flushed and fsynced before the next request starts. A run killed with
SIGKILL can leave at most one partial last line; reopening the store drops that fragment and carries on. The file
starts with a header holding the run fingerprint (task config, model, seed): a store written under another
configuration is never mixed into this one.

A store is trusted only if it reads unambiguously: a file without its header, a record that is not an object or
lacks a field, or one instance stored twice with different responses is refused with the file and line, and
``harness store check|repair`` (:func:`scan`, :func:`repair`) says what is wrong and fixes what can be fixed
without guessing. Identical duplicates (the same response twice) are harmless and are read as one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, shorten
from harness.files import decode_utf8, read_bytes

#: Fields of an instance record.
RECORD_FIELDS = ("id", "seed", "response")
STORE_NAME_RE = re.compile(r"^(?P<task>.+)-(?P<fingerprint>[0-9a-f]{16})\.jsonl$")


@dataclass
class Problem:
    line: int
    message: str
    #: What ``harness store repair`` does about it, or None when it cannot be repaired without guessing.
    repair: str | None


@dataclass
class Scan:
    """What a store file holds, and everything wrong with it."""

    path: Path
    header: dict[str, Any] | None = None
    model_info: dict[str, Any] = field(default_factory=dict)
    model_info_lines: list[dict[str, Any]] = field(default_factory=list)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    record_lines: dict[str, int] = field(default_factory=dict)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    duplicates: int = 0
    #: Bytes up to the last newline, and in all: more in all means a partial last line (a write cut short).
    complete_bytes: int = 0
    total_bytes: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def partial_tail(self) -> bool:
        return self.complete_bytes < self.total_bytes

    def fail(self, line: int, message: str, repair: str | None) -> None:
        self.problems.append(Problem(line, message, repair))


def scan(path: Path) -> Scan:
    """Read a store file completely, collecting every problem instead of stopping at the first."""
    result = Scan(path)
    raw = read_bytes(path)
    result.complete_bytes, result.total_bytes = raw.rfind(b"\n") + 1, len(raw)
    text = decode_utf8(raw[: result.complete_bytes], path)
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            result.fail(line_no, f"not JSON: {shorten(line.strip(), 60)}", None)
            continue
        if not isinstance(record, dict):
            result.fail(line_no, f"expected a JSON object, got {type(record).__name__}", None)
            continue
        if "fingerprint" in record:
            if result.header is not None:
                result.fail(line_no, "a second header line", "dropped (the first header is kept)")
            else:
                if line_no != 1:
                    result.fail(line_no, "the header is not the first line", "moved to the first line")
                result.header = record
            continue
        if "model_info" in record:
            result.model_info = record["model_info"]
            result.model_info_lines.append(record)
            continue
        missing = [f for f in RECORD_FIELDS if f not in record]
        if missing:
            result.fail(line_no, f"record without field '{missing[0]}'", None)
            continue
        key = str(record["id"])
        if key in result.records:
            first = result.records[key]
            if (first["seed"], first["response"]) == (record["seed"], record["response"]):
                result.duplicates += 1
                continue
            result.fail(
                line_no,
                f"instance {shorten(key, 40)} again, with another response than line {result.record_lines[key]}",
                "the first kept, the later ones moved to <store>.rejected.jsonl",
            )
            result.rejected.append(record)
            continue
        result.records[key] = record
        result.record_lines[key] = line_no
    if result.header is None and (result.records or result.model_info_lines or result.problems):
        fingerprint = _fingerprint_from_name(path)
        fix = f"header restored from the file name (fingerprint {fingerprint})" if fingerprint else None
        result.fail(1, "no header line (the run fingerprint that ties the records to a configuration)", fix)
    result.problems.sort(key=lambda problem: problem.line)
    return result


def _fingerprint_from_name(path: Path) -> str | None:
    match = STORE_NAME_RE.match(path.name)
    return match.group("fingerprint") if match else None


def repair(path: Path) -> tuple[Scan, Path | None]:
    """Rewrite a store without its repairable problems; returns the scan and the backup of the original.

    Refuses (HarnessError) when a problem cannot be repaired without guessing. Conflicting duplicates are kept
    aside in ``<store>.rejected.jsonl``; the original file is kept as ``<store>.bak-<UTC time>``.
    """
    result = scan(path)
    hopeless = [p for p in result.problems if p.repair is None]
    if hopeless:
        first = hopeless[0]
        raise HarnessError(f"{path}: line {first.line}: {first.message}; cannot be repaired without guessing")
    if not result.problems and not result.duplicates and not result.partial_tail:
        return result, None
    header = result.header
    if header is None:
        match = STORE_NAME_RE.match(path.name)
        assert match is not None  # a header-less store without a fingerprint name is not repairable (above)
        header = {"fingerprint": match.group("fingerprint"), "task": match.group("task"), "restored": True}
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    backup = path.with_name(f"{path.name}.bak-{stamp}")
    os.replace(path, backup)
    lines = [header, *result.model_info_lines, *result.records.values()]
    _write_lines(path, lines, create=True)
    if result.rejected:
        _write_lines(path.with_name(f"{path.name}.rejected.jsonl"), result.rejected, create=False)
    return result, backup


def _write_lines(path: Path, records: list[dict[str, Any]], create: bool) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records).encode("utf-8")
    with path.open("wb" if create else "ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


class ResponseStore:
    def __init__(self, path: Path, fingerprint: str, header: dict[str, Any]) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self.records: dict[str, dict[str, Any]] = {}
        #: Provenance of the model that answered (``ModelAdapter.info()``), kept so that a finished run scored
        #: again without loading the model writes the same results.
        self.model_info: dict[str, Any] = {}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"{path.parent}: cannot create the store's folder ({exc.strerror or exc})") from exc
        if path.is_file() and path.stat().st_size > 0:
            self._read_existing()
        elif path.exists() and not path.is_file():
            raise HarnessError(f"{path}: expected the response store file, found a folder or other non-file")
        else:
            self._write_line({"fingerprint": fingerprint, **header}, create=True)

    def _read_existing(self) -> None:
        result = scan(self.path)
        if result.problems:
            first = result.problems[0]
            fix = f"; `harness store repair {self.path}` fixes it" if first.repair else ""
            count = len(result.problems)
            more = f" ({count} problems; `harness store check` lists them)" if count > 1 else ""
            raise HarnessError(f"{self.path}: line {first.line}: {first.message}{fix}{more}")
        if result.header is None:  # only an empty file (or only blank lines) gets here
            self._write_line({"fingerprint": self.fingerprint}, create=True)
            return
        if result.header.get("fingerprint") != self.fingerprint:
            raise HarnessError(
                f"{self.path}: written by a run with another configuration (fingerprint "
                f"{shorten(result.header.get('fingerprint'), 20)}, this run {self.fingerprint}); delete it or use "
                "another --output-dir"
            )
        if result.partial_tail:
            # Every record is written with its newline in one write: an unterminated tail is the fragment of a
            # write cut short by a kill. Drop it; that instance is simply asked again (sampling is seeded).
            with self.path.open("r+b") as f:
                f.truncate(result.complete_bytes)
        self.records = result.records
        self.model_info = result.model_info

    def _write_line(self, record: dict[str, Any], create: bool = False) -> None:
        data = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        try:
            with self.path.open("wb" if create else "ab") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise HarnessError(
                f"{self.path}: cannot write ({exc.strerror or exc}); the {len(self.records)} responses stored "
                "before are safe: free space (or raise the file-size limit) and run the same command again to resume"
            ) from exc

    def __contains__(self, instance_id: str) -> bool:
        return instance_id in self.records

    def get(self, instance_id: str) -> dict[str, Any]:
        return self.records[instance_id]

    def set_model_info(self, info: dict[str, Any]) -> None:
        if info != self.model_info:
            self._write_line({"model_info": info})
            self.model_info = info

    def append(
        self, instance_id: str, seed: int, response: dict[str, Any], request: dict[str, Any] | None = None
    ) -> None:
        """Store one answered instance; ``request`` is what was asked (the samples' ``arguments``)."""
        record: dict[str, Any] = {"id": instance_id, "seed": seed, "response": response}
        if request is not None:
            record["request"] = request
        self._write_line(record)
        self.records[instance_id] = record
