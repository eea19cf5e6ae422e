"""Load and kill test of ``harness collect serve``: many simulated participants at once over HTTP, the server killed
with SIGKILL mid-run and restarted on the same database; nothing a participant was told was stored may be lost.

    .venv/bin/python benchmarks/collect_load.py --participants 100

Each participant is a thread with its own session cookie (``http.client``, one keep-alive connection each): it
opens the study link, consents and answers every step of its items; every answer the server acknowledged (HTTP 200,
``stored: true``) is recorded. Once ``--kill-at`` of the expected answers are acknowledged the server is killed
(SIGKILL: no shutdown, no flush beyond what SQLite committed) and started again on the same port and database;
participants whose requests failed wait for it, ask ``GET /api/state`` where they are, and go on. The answers are a
function of (participant, item slot, step), so an answer stored whose acknowledgement was lost is sent identically
if sent again (and refused with 409 as already answered).

Checks, printed as one JSON summary: every acknowledged answer is in the database with its value (``lost`` 0),
no (participant, slot, step) is stored twice (``duplicates`` 0), and every item is at its target (balanced
coverage: the study has fewer slots than the participants want, so every item must fill). ``tests/test_collect_load.py``
runs the same scenario with 50 participants. The helpers here (``Client``, ``Server``) are used by
``scripts/replay_provo_collect.py`` too.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SERVING = re.compile(r"harness collect: serving '.*' on (http://\S+?)/?$")
#: Seconds a participant keeps retrying while the server is away (killed and restarting).
RETRY_SECONDS = 120.0
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
]


class ServerGone(Exception):
    """The request got no answer: the connection failed or broke (the server was killed or is starting)."""


class Client:
    """One participant's browser: a session cookie, the CSRF token from ``/api/state``, one keep-alive connection."""

    def __init__(self, base_url: str, timeout: float = 60.0) -> None:
        url = urllib.parse.urlsplit(base_url)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self.prefix = url.path.rstrip("/")
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None
        self.session: str | None = None
        self.csrf: str | None = None
        self.requests = 0

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def send(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        headers = {}
        if self.session:
            headers["Cookie"] = f"hc_session={self.session}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers.update({"Content-Type": "application/json", "X-CSRF-Token": self.csrf or ""})
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.conn.request(method, self.prefix + path, body=data, headers=headers)
            response = self.conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise ServerGone(str(exc)) from None
        self.requests += 1
        for cookie in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = cookie.partition("=")
            if name.strip() == "hc_session":
                self.session = rest.split(";", 1)[0]
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return response.status, payload

    def join(self, external_id: str) -> None:
        status, _ = self.send("GET", "/?PROLIFIC_PID=" + urllib.parse.quote(external_id))
        if status != 303 or not self.session:
            raise AssertionError(f"joining as {external_id}: status {status}, no session cookie")

    def state(self) -> dict[str, Any]:
        status, payload = self.send("GET", "/api/state")
        if status != 200:
            raise AssertionError(f"GET /api/state: {status} {payload[:200]!r}")
        answer = json.loads(payload)
        self.csrf = answer["csrf"]
        return dict(answer["state"])

    def consent(self) -> dict[str, Any]:
        status, payload = self.send("POST", "/api/consent", {})
        if status != 200:
            raise AssertionError(f"POST /api/consent: {status} {payload[:200]!r}")
        return dict(json.loads(payload)["state"])

    def answer(self, seq: int, step: int, answer: Any, client_ms: int = 1000) -> tuple[int, dict[str, Any]]:
        body = {"seq": seq, "step": step, "answer": answer, "client_ms": client_ms, "timed_out": False}
        status, payload = self.send("POST", "/api/answer", body)
        return status, json.loads(payload) if payload.startswith(b"{") else {}


@dataclass
class Server:
    """``harness collect serve`` as a subprocess; ``start`` waits for its ``serving ... on URL`` line."""

    study: Path
    db: Path
    log: Path
    port: int = 0
    url: str = ""
    proc: subprocess.Popen[str] | None = None
    starts: int = 0

    def start(self, timeout: float = 60.0) -> str:
        env = {**os.environ, "HARNESS_COLLECT_ADMIN_TOKEN": "load-test-admin-token-0123456789"}
        # Every simulated participant joins from 127.0.0.1: no limit on joins per address.
        command = [sys.executable, "-m", "harness", "collect", "serve", str(self.study), "--db", str(self.db),
                   "--port", str(self.port), "--joins-per-minute", "0"]  # fmt: skip
        with self.log.open("a", encoding="utf-8") as log:
            self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=REPO)
        assert self.proc.stdout is not None
        found: list[str] = []

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:  # keep draining: the pipe must never fill
                match = SERVING.search(line.strip())
                if match and not found:
                    found.append(match.group(1))

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the server did not start: {self.log.read_text(encoding='utf-8')[-2000:]}")
            time.sleep(0.02)
        self.url = found[0]
        self.port = int(urllib.parse.urlsplit(self.url).port or 0)  # a restart takes the same port
        self.starts += 1
        return self.url

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to flush or shut down."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


#: The load study's shape: items per participant, people per item, words per text (steps per item: words - 1).
PER_PARTICIPANT, TARGET, TEXT_WORDS = 2, 10, 10


def write_load_study(folder: Path, participants: int) -> Path:
    """A passage-cloze study whose items hold fewer slots (about 80%) than the participants want, so that balanced
    assignment must bring every item to its target."""
    rows = ["id,text"]
    for i in range(load_items(participants)):
        rows.append(f"t{i},{' '.join(WORDS[(i + k) % len(WORDS)] for k in range(TEXT_WORDS))}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "texts.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    study = folder / "load.yaml"
    study.write_text(
        "study: load\nkind: passage_cloze\ntexts: {file: texts.csv}\n"
        f"participants_per_item: {TARGET}\nitems_per_participant: {PER_PARTICIPANT}\n"
        "consent: I agree.\ninstructions: Guess the next word.\n",
        encoding="utf-8",
    )
    return study


def load_items(participants: int) -> int:
    return max(2, (participants * PER_PARTICIPANT * 4 // 5) // TARGET)


def scripted_answer(external_id: str, seq: int, step: int) -> str:
    """The same answer whenever this step is answered (a resend after a lost acknowledgement is identical)."""
    return f"{external_id}-{seq}-{step}"


@dataclass
class Tally:
    """What the participants were told: each acknowledged answer, and the requests made."""

    acknowledged: dict[tuple[str, int, int], str] = field(default_factory=dict)
    #: After each lost connection: (participant, its last acknowledged (seq, step) or None, the state it resumed at).
    resumes: list[tuple[str, tuple[int, int] | None, dict[str, Any]]] = field(default_factory=list)
    refused: int = 0
    retries: int = 0
    #: Times a participant was told every place left was held by someone else, and came back.
    waits: int = 0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def play(base_url: Callable[[], str], external_id: str, tally: Tally,
         answer_for: Callable[[str, dict[str, Any]], Any] | None = None) -> None:  # fmt: skip
    """One participant from the study link to the end, riding out a server restart (retrying for
    :data:`RETRY_SECONDS`, then resuming from ``GET /api/state``)."""
    client = Client(base_url())
    deadline = 0.0
    joined = resuming = False
    last: tuple[int, int] | None = None
    state: dict[str, Any] | None = None
    try:
        while True:
            try:
                if not joined:
                    client.join(external_id)
                    joined = True
                if state is None:
                    state = client.state()
                    if resuming:
                        with tally.lock:
                            tally.resumes.append((external_id, last, state))
                        resuming = False
                if state["phase"] == "consent":
                    state = client.consent()
                    continue
                if state["phase"] == "unavailable" and state.get("reason") == "held":
                    # Turned away before consent (no code): every place left is held by someone still answering.
                    # Come back a little later, as the page tells a participant to.
                    with tally.lock:
                        tally.waits += 1
                    time.sleep(0.05)
                    state = None
                    continue
                if state["phase"] != "item":
                    return
                seq, step = int(state["seq"]), int(state["step"])
                answer = answer_for(external_id, state) if answer_for else scripted_answer(external_id, seq, step)
                status, reply = client.answer(seq, step, answer)
                if status == 200 and reply.get("stored"):
                    with tally.lock:
                        tally.acknowledged[(external_id, seq, step)] = answer
                    last = (seq, step)
                    state = reply["state"]
                elif status == 409:  # stored before the acknowledgement was lost: ask where we are
                    with tally.lock:
                        tally.refused += 1
                    state = None
                else:
                    raise AssertionError(f"{external_id}: POST /api/answer: {status} {reply}")
                deadline = 0.0
            except ServerGone:
                now = time.monotonic()
                deadline = deadline or now + RETRY_SECONDS
                if now > deadline:
                    raise AssertionError(f"{external_id}: the server did not come back") from None
                with tally.lock:
                    tally.retries += 1
                resuming = True
                time.sleep(0.05)
                client.close()
                client = Client(base_url()) if client.session is None else _same_session(client, base_url())
                state = None
    finally:
        with tally.lock:
            tally.requests += client.requests
        client.close()


def _same_session(old: Client, url: str) -> Client:
    new = Client(url)
    new.session, new.csrf, new.requests = old.session, old.csrf, old.requests
    return new


def check_database(db: Path, tally: Tally) -> dict[str, int]:
    """Acknowledged answers missing or changed in the database (``lost``), answers stored twice
    (``duplicates``), participants who finished, and the counts."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT p.external_id, r.seq, r.step, r.answer FROM responses r JOIN participants p USING (pid)"
        ).fetchall()
        complete = conn.execute("SELECT COUNT(*) FROM participants WHERE status = 'complete'").fetchone()[0]
    finally:
        conn.close()
    stored: dict[tuple[str, int, int], list[str]] = {}
    for external_id, seq, step, answer in rows:
        stored.setdefault((external_id, seq, step), []).append(answer)
    lost = sum(1 for key, answer in tally.acknowledged.items() if stored.get(key, [None])[0] != answer)
    return {
        "participants_complete": complete,
        "responses_in_db": len(rows),
        "lost": lost,
        "duplicates": sum(len(v) - 1 for v in stored.values()),
        "stored_unacknowledged": sum(1 for key in stored if key not in tally.acknowledged),
    }


def coverage(db: Path, default_target: int) -> list[tuple[str, int, int]]:
    """(item, finished assignments, target) of every main item."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT i.item_id, COUNT(a.pid), i.participants FROM items i LEFT JOIN assignments a ON a.item_id = "
            "i.item_id AND a.finished IS NOT NULL WHERE i.role = 'main' GROUP BY i.item_id ORDER BY i.ord"
        ).fetchall()
    finally:
        conn.close()
    return [(str(item), int(n), int(wanted or default_target)) for item, n, wanted in rows]


def run_scenario(folder: Path, participants: int, kill_at: float | None = 0.4, tally: Tally | None = None
                 ) -> dict[str, Any]:  # fmt: skip
    """Serve a load study, run ``participants`` at once (a thread each), kill and restart the server once
    ``kill_at`` of the expected answers are acknowledged (None: never); the JSON summary. ``tally`` (filled in)
    keeps what the participants were told, for a caller's own checks."""
    study = write_load_study(folder, participants)
    db = folder / "load.sqlite"
    server = Server(study, db, folder / "server.log")
    server.start()
    tally = tally if tally is not None else Tally()
    expected = load_items(participants) * TARGET * (TEXT_WORDS - 1)
    killed_at: list[int] = []
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=participants) as pool:
            futures = [pool.submit(play, lambda: server.url, f"p{i:04d}", tally) for i in range(participants)]
            while kill_at is not None and not killed_at and not all(f.done() for f in futures):
                if len(tally.acknowledged) >= kill_at * expected:
                    server.kill()
                    killed_at.append(len(tally.acknowledged))
                    server.start()
                time.sleep(0.01)
            for f in futures:
                f.result()
        elapsed = time.monotonic() - started
    finally:
        server.stop()
    checked = check_database(db, tally)
    cover = coverage(db, TARGET)
    return {
        "participants": participants,
        "items": len(cover),
        "items_at_target": sum(n == wanted for _, n, wanted in cover),
        "items_over_target": sum(n > wanted for _, n, wanted in cover),
        "responses_acknowledged": len(tally.acknowledged),
        **checked,
        "killed_after_acknowledged": killed_at[0] if killed_at else None,
        "server_starts": server.starts,
        "client_retries": tally.retries,
        "told_to_come_back": tally.waits,
        "participants_resumed": len({r[0] for r in tally.resumes}),
        "answers_refused_409": tally.refused,
        "requests": tally.requests,
        "seconds": round(elapsed, 2),
        "requests_per_second": round(tally.requests / elapsed, 1) if elapsed else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--participants", type=int, default=100, help="simulated participants at once (default 100)")
    parser.add_argument("--kill-at", type=float, default=0.4, help="kill the server after this share of the answers")
    parser.add_argument("--no-kill", action="store_true", help="only the load test: never kill the server")
    parser.add_argument("--folder", type=Path, help="keep the study, database and server log here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="collect-load-") as tmp:
        folder = args.folder or Path(tmp)
        summary = run_scenario(folder, args.participants, None if args.no_kill else args.kill_at)
    print(json.dumps(summary, indent=2))
    ok = summary["lost"] == 0 and summary["duplicates"] == 0 and summary["items_at_target"] == summary["items"]
    ok = ok and summary["participants_complete"] == summary["participants"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
