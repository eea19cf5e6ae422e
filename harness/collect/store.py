"""The study database: one SQLite file in WAL mode, the only place a response lives.

Why SQLite, and why so strict: a response a participant submitted is acknowledged only after its transaction is
committed with ``synchronous=FULL``, so a server killed with SIGKILL (or a machine that loses power) loses nothing
it acknowledged. WAL lets ``harness collect status`` and ``export`` read while the server writes. Every write goes
through one transaction (``BEGIN IMMEDIATE``) under a process-wide lock, so two participants never get the same
last free slot of an item. Each thread has its own connection (the server answers requests on a thread pool).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.collect.items import Item
from harness.collect.study import Study, parse_study
from harness.errors import HarnessError

SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    item_id TEXT PRIMARY KEY,
    ord INTEGER NOT NULL,
    role TEXT NOT NULL,
    payload TEXT NOT NULL,
    n_steps INTEGER NOT NULL,
    participants INTEGER
);
CREATE TABLE IF NOT EXISTS participants (
    pid INTEGER PRIMARY KEY,
    external_id TEXT NOT NULL UNIQUE,
    id_source TEXT NOT NULL,
    session TEXT NOT NULL UNIQUE,
    csrf TEXT NOT NULL,
    created REAL NOT NULL,
    consented REAL,
    completed REAL,
    status TEXT NOT NULL DEFAULT 'active',
    excluded_reason TEXT
);
CREATE TABLE IF NOT EXISTS assignments (
    pid INTEGER NOT NULL REFERENCES participants(pid),
    seq INTEGER NOT NULL,
    item_id TEXT NOT NULL REFERENCES items(item_id),
    role TEXT NOT NULL,
    assigned REAL NOT NULL,
    touched REAL NOT NULL,  -- when the slot was made; no longer updated (a place is held from ``assigned``)
    finished REAL,
    released REAL,
    PRIMARY KEY (pid, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS one_main_item_per_person ON assignments (pid, item_id) WHERE role = 'main';
CREATE INDEX IF NOT EXISTS assignments_by_item ON assignments (item_id);
CREATE TABLE IF NOT EXISTS responses (
    rid INTEGER PRIMARY KEY,
    pid INTEGER NOT NULL REFERENCES participants(pid),
    seq INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    answer TEXT NOT NULL,
    judgment REAL,
    shown_order TEXT,
    timed_out INTEGER NOT NULL DEFAULT 0,
    client_ms INTEGER,
    received REAL NOT NULL,
    UNIQUE (pid, seq, step)
);
"""


class StudyStore:
    """The database of one study. ``write()`` is the one way to change it; ``read()`` gives a connection for
    queries (each thread its own)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._write_lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        owner_only(path)
        with self._write_lock:  # executescript commits on its own: no BEGIN around it
            self._connection().executescript(SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
                db.row_factory = sqlite3.Row
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
                db.execute("PRAGMA foreign_keys=ON")
            except sqlite3.Error as exc:
                raise HarnessError(f"{self.path}: cannot open the study database ({exc})") from None
            self._local.db = db
        return db

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed (and on disk) when the block ends, rolled back if it raises."""
        db = self._connection()
        with self._write_lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (disk full, I/O error) may leave the transaction open and the database locked for
                # every other thread; SQLite may also have rolled back already, and a second ROLLBACK would hide the
                # first error.
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def read(self) -> sqlite3.Connection:
        return self._connection()

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # ------------------------------------------------------------------------------------------------ study
    def meta(self, key: str) -> str | None:
        row = self.read().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["value"])

    def install(self, study: Study, items: Sequence[Item]) -> None:
        """Store the study's items and the study as served, once (a database that already holds a study is left
        as it is: ``harness.collect.prepare`` decides whether the study file may continue it)."""
        with self.write() as db:
            if db.execute("SELECT 1 FROM meta WHERE key = 'digest'").fetchone() is not None:
                raise HarnessError(f"{self.path}: the study database already holds a study")
            db.executemany(
                "INSERT INTO items (item_id, ord, role, payload, n_steps, participants) VALUES (?, ?, ?, ?, ?, ?)",
                [(it.item_id, i, it.role, json.dumps(it.payload, ensure_ascii=False), it.n_steps,
                  it.payload.get("participants")) for i, it in enumerate(items)],
            )  # fmt: skip
            db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("study", study.name), ("schema", SCHEMA_VERSION), *_served(study)],
            )

    def served_study(self, path: Path) -> Study | None:
        """The study as the server last served it (read from the copy kept here; ``path`` is the study file it
        came from), or None for a database made before copies were kept."""
        source, digest, texts = self.meta("study_source"), self.meta("digest"), self.meta("texts_sha256")
        if source is None or digest is None:
            return None
        return parse_study(json.loads(source), path, stored=(digest, texts or ""))

    def record_edit(self, study: Study, fields: list[str]) -> None:
        """Continue the database under an edited study file (its changes judged safe): keep the new copy and log
        which fields changed from which version, so an export can say what participants were shown when."""
        with self.write() as db:
            old = db.execute("SELECT value FROM meta WHERE key = 'digest'").fetchone()
            edits = json.loads((db.execute("SELECT value FROM meta WHERE key = 'edits'").fetchone() or ["[]"])[0])
            if fields:  # none: a database made before copies were kept gets its copy
                edits.append({"at": time.time(), "from": old[0] if old else None, "to": study.digest, "fields": fields})
            db.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [*_served(study), ("edits", json.dumps(edits, ensure_ascii=False))],
            )

    def edits(self) -> list[dict[str, Any]]:
        """The edits of the study file this database was continued under, oldest first."""
        return list(json.loads(self.meta("edits") or "[]"))

    def is_installed(self) -> bool:
        return self.meta("digest") is not None

    def items(self, role: str | None = None) -> list[Item]:
        query = "SELECT item_id, role, payload, n_steps FROM items"
        rows = self.read().execute(
            query + (" WHERE role = ?" if role else "") + " ORDER BY ord", (role,) if role else ()
        )
        return [Item(r["item_id"], r["role"], json.loads(r["payload"]), int(r["n_steps"])) for r in rows]

    def responses(self) -> list[dict[str, Any]]:
        """Every stored response with its participant and item, in the order received."""
        rows = self.read().execute(
            # server_ms: the time the server measured for the answer, from the participant's previous stored answer
            # (or their consent) to this one; it includes reading the feedback and any pause, and cannot be forged.
            "SELECT r.*, p.external_id, p.id_source, p.status, p.excluded_reason, a.role, CAST(ROUND(1000 * "
            "(r.received - COALESCE(LAG(r.received) OVER (PARTITION BY r.pid ORDER BY r.rid), p.consented))) "
            "AS INTEGER) AS server_ms "
            "FROM responses r JOIN participants p USING (pid) JOIN assignments a USING (pid, seq) ORDER BY r.rid"
        )
        return [dict(r) for r in rows]

    def participants(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.read().execute("SELECT * FROM participants ORDER BY pid")]


def _served(study: Study) -> list[tuple[str, str]]:
    return [
        ("digest", study.digest),
        ("study_source", json.dumps(study.source, sort_keys=True, ensure_ascii=False)),
        ("texts_sha256", study.texts_sha256),
    ]


def owner_only(path: Path) -> None:
    """Make the database (and its -wal and -shm files, which SQLite creates with the database's mode) readable and
    writable by its owner only: it holds platform ids and the export's pseudonym salt. A new database is created
    so; an existing one is tightened (where this user may)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open the study database ({exc.strerror or exc})") from None
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if file.exists() and file.stat().st_mode & 0o077:
                os.chmod(file, 0o600)
        except OSError:  # not ours: SQLite reports it if it cannot open it
            pass
