"""``harness collect serve`` as a real subprocess under load, and killed with SIGKILL under load
(``benchmarks/collect_load.py`` holds the scenario; run it there with more participants for the figures).

Why: a study runs for days on one machine; the server will be restarted, and will sometimes die. What a participant
was told was stored must be in the database exactly once, whatever happened to the process, and participants must
be able to go on from where they were."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from benchmarks.collect_load import TEXT_WORDS, Client, Server, Tally, run_scenario, write_load_study

pytestmark = pytest.mark.slow
pytest.importorskip("uvicorn")

PARTICIPANTS = 50
STEPS = TEXT_WORDS - 1  # every load item is a 10-word passage guessed from word 2


def stored(db: Path) -> dict[tuple[str, int, int], int]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT p.external_id, r.seq, r.step, COUNT(*) FROM responses r JOIN participants p USING (pid) "
            "GROUP BY p.external_id, r.seq, r.step"
        ).fetchall()
    finally:
        conn.close()
    return {(e, s, t): n for e, s, t, n in rows}


def check(summary: dict[str, Any], tally: Tally, db: Path) -> dict[tuple[str, int, int], int]:
    """Every acknowledged answer stored once with its value; every participant done; every item at its target."""
    in_db = stored(db)
    assert summary["lost"] == 0 and summary["duplicates"] == 0 and set(in_db.values()) == {1}
    assert set(tally.acknowledged) <= set(in_db)
    assert summary["participants_complete"] == PARTICIPANTS
    assert summary["items_at_target"] == summary["items"] and summary["items_over_target"] == 0
    # The study has fewer slots than the participants want: all of them are filled, each with a finished item.
    assert summary["responses_in_db"] == summary["items"] * 10 * STEPS
    return in_db


def test_fifty_participants_at_once_store_every_answer_once_and_fill_every_item(tmp_path: Path) -> None:
    tally = Tally()
    summary = run_scenario(tmp_path, PARTICIPANTS, kill_at=None, tally=tally)
    check(summary, tally, tmp_path / "load.sqlite")
    assert summary["responses_acknowledged"] == summary["responses_in_db"]  # nothing went wrong: all acknowledged
    assert summary["server_starts"] == 1 and summary["client_retries"] == 0
    print(f"\ncollect load: {json.dumps(summary)}")


def test_a_server_killed_under_load_loses_no_acknowledged_answer_and_participants_resume(tmp_path: Path) -> None:
    tally = Tally()
    summary = run_scenario(tmp_path, PARTICIPANTS, kill_at=0.4, tally=tally)
    in_db = check(summary, tally, tmp_path / "load.sqlite")
    assert summary["server_starts"] == 2 and summary["killed_after_acknowledged"] is not None
    assert summary["participants_resumed"] > 0
    # Each participant who lost the server resumed at the step after its last acknowledged answer, or one further
    # when the answer in flight had been stored but its acknowledgement was lost.
    for external_id, last, state in tally.resumes:
        if last is None:  # lost before its first answer: still at consent or the first step
            continue
        expected = following(last)
        if (external_id, *expected) in in_db and (external_id, *expected) not in tally.acknowledged:
            expected = following(expected)
        if state["phase"] == "item":
            assert (state["seq"], state["step"]) == expected, (external_id, last, state)
        else:
            # Complete, or complete early (every place left was held when it wanted its next item).
            assert state["phase"] == "complete" and expected == (state["items_done"], 0), (external_id, last, state)
    print(f"\ncollect kill: {json.dumps(summary)}")


def following(key: tuple[int, int]) -> tuple[int, int]:
    seq, step = key
    return (seq, step + 1) if step + 1 < STEPS else (seq + 1, 0)


def test_the_server_prints_where_it_listens_and_answers_health_and_state(tmp_path: Path) -> None:
    study = write_load_study(tmp_path, 10)
    server = Server(study, tmp_path / "db.sqlite", tmp_path / "server.log")
    url = server.start()
    try:
        assert url.startswith("http://127.0.0.1:") and server.port > 0
        client = Client(url)
        assert client.send("GET", "/healthz") == (200, b"ok")
        assert client.send("GET", "/api/state")[0] == 401  # no session yet
        client.join("someone")
        assert client.state()["phase"] == "consent"
        state = client.consent()
        status, reply = client.answer(state["seq"], state["step"], "alpha")
        assert status == 200 and reply["stored"] is True
        assert client.answer(state["seq"], state["step"], "alpha")[0] == 409  # a replay is refused
    finally:
        server.stop()
    assert server.proc is not None and server.proc.returncode == 0  # SIGTERM: a clean shutdown
    assert (tmp_path / "db.sqlite").is_file()
