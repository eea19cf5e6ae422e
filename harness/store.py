"""An append-only store of model responses, written as they arrive so a killed run loses nothing finished.

One JSON line per answered instance, flushed and fsynced before the next request starts. A run killed with
SIGKILL can leave at most one partial last line; reopening the store drops that fragment and carries on. The file
starts with a header holding the run fingerprint (task config, model, seed): a store written under another
configuration is never mixed into this one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.errors import HarnessError


class ResponseStore:
    def __init__(self, path: Path, fingerprint: str, header: dict[str, Any]) -> None:
        self.path = path
        self.fingerprint = fingerprint
        self.records: dict[str, dict[str, Any]] = {}
        #: Provenance of the model that answered (``ModelAdapter.info()``), kept so that a finished run scored
        #: again without loading the model writes the same results.
        self.model_info: dict[str, Any] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            self._read_existing()
        else:
            self._write_line({"fingerprint": fingerprint, **header}, create=True)

    def _read_existing(self) -> None:
        raw = self.path.read_bytes()
        # Every record is written with its newline in one write: an unterminated tail is the fragment of a write
        # cut short by a kill. Drop it; that instance is simply asked again (sampling is seeded per instance).
        complete_end = raw.rfind(b"\n") + 1
        if complete_end < len(raw):
            with self.path.open("r+b") as f:
                f.truncate(complete_end)
        lines = raw[:complete_end].splitlines()
        if not lines:
            self._write_line({"fingerprint": self.fingerprint}, create=True)
            return
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HarnessError(f"{self.path}: line {i + 1}: corrupt record in the response store ({exc})") from exc
            self._accept(record, i)

    def _accept(self, record: dict[str, Any], line_index: int) -> None:
        if "fingerprint" in record:
            if record["fingerprint"] != self.fingerprint:
                raise HarnessError(
                    f"{self.path}: written by a run with another configuration (fingerprint "
                    f"{record['fingerprint']}, this run {self.fingerprint}); delete it or use another --output-dir"
                )
            return
        if "model_info" in record:
            self.model_info = record["model_info"]
            return
        if "id" not in record:
            raise HarnessError(f"{self.path}: line {line_index + 1}: record has no 'id'")
        self.records[str(record["id"])] = record

    def _write_line(self, record: dict[str, Any], create: bool = False) -> None:
        data = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        with self.path.open("wb" if create else "ab") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def __contains__(self, instance_id: str) -> bool:
        return instance_id in self.records

    def get(self, instance_id: str) -> dict[str, Any]:
        return self.records[instance_id]

    def set_model_info(self, info: dict[str, Any]) -> None:
        if info != self.model_info:
            self._write_line({"model_info": info})
            self.model_info = info

    def append(self, instance_id: str, seed: int, response: dict[str, Any]) -> None:
        record = {"id": instance_id, "seed": seed, "response": response}
        self._write_line(record)
        self.records[instance_id] = record
