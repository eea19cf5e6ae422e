"""A study nobody can wedge, and an organiser who steers it while it runs: turned-away participants get no code,
excluded ones their own, ``harness collect exclude|release`` act on a running server's database, ``status`` and
``export`` still read a database whose study file was edited, and the database is readable by its owner only.

Every scenario runs the real server (in this process, on 127.0.0.1) and checks the database afterwards: no
acknowledged answer lost, none stored twice."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.collect.prepare import open_study
from harness.collect.store import StudyStore
from tests.collect_server import Running, running_server, write_study
from tests.conftest import run_main

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

#: Four passages, five people each, one passage per person: 20 places.
HOLD_STUDY = """\
study: hold-test
title: Reading study
kind: passage_cloze
texts: {file: texts.csv}
participants_per_item: 5
items_per_participant: 1
consent: You are invited to take part in a study of reading.
instructions: Guess each next word.
completion: {code: PAID-CODE, url: "https://example.org/done?cc=PAID-CODE", excluded_code: SCREENED-OUT}
time_limits: {session_minutes: 60}
"""
HOLD_TEXTS = (
    "id,text\na,The cat sat on the mat.\nb,Dogs like to run far.\nc,It was a cold night.\nd,She read the old book.\n"
)


class Person:
    """One participant's browser: the study link, then the page's API calls."""

    def __init__(self, server: Running, external_id: str) -> None:
        self.client = httpx.Client(base_url=server.url, follow_redirects=False, timeout=20)
        joined = self.client.get("/", params={"PROLIFIC_PID": external_id})
        assert joined.status_code == 303, joined.text
        self.external_id = external_id
        self.info: dict[str, Any] = {}
        self.get_state()

    def get_state(self) -> dict[str, Any]:
        response = self.client.get("/api/state")
        assert response.status_code == 200, response.text
        self.info = response.json()
        return dict(self.info["state"])

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.post(
            path,
            content=json.dumps(body).encode(),
            headers={"X-CSRF-Token": self.info["csrf"], "Content-Type": "application/json"},
        )
        assert response.status_code == 200, response.text
        return dict(response.json())

    def consent(self) -> dict[str, Any]:
        return self.post("/api/consent", {})

    def answer(self, state: dict[str, Any], text: str) -> dict[str, Any]:
        return self.post("/api/answer", {"seq": state["seq"], "step": state["step"], "answer": text})["state"]


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Running]:
    with running_server(write_study(tmp_path, HOLD_STUDY, HOLD_TEXTS)) as running:
        yield running


def answers_in_db(server: Running) -> list[tuple[str, int, int, str]]:
    """Every stored answer: (participant, seq, step, answer), in the order received."""
    return [
        (str(e), int(s), int(t), str(a))
        for e, s, t, a in server.rows(
            "SELECT p.external_id, r.seq, r.step, r.answer FROM responses r JOIN participants p USING (pid) "
            "ORDER BY r.rid"
        )
    ]


def no_code_anywhere(state: dict[str, Any]) -> None:
    text = json.dumps(state)
    assert "PAID-CODE" not in text and "example.org" not in text and "SCREENED-OUT" not in text


def test_twenty_made_up_ids_hold_every_place_until_the_organiser_releases_two(held: Running) -> None:
    """The issue's scenario: 20 made-up ids take every place; a late participant is turned away before consent and
    sees no code and no link; ``harness collect release`` frees two places while the server runs; the late
    participant is then served and finishes with the code. Nothing the fakes answered is lost."""
    fakes = [Person(held, f"fake-{i:02d}") for i in range(20)]
    for fake in fakes:
        assert fake.consent()["state"]["phase"] == "item"  # each holds a passage from consent on
    first = fakes[0].get_state()
    assert first["view"]["context"] == "The"
    after_two = fakes[0].answer(fakes[0].answer(first, "dog"), "ran")  # fake-00 answers two words, then stops
    assert after_two["step"] == 2

    late = Person(held, "late-participant")
    state = late.get_state()
    assert state == {"phase": "unavailable", "reason": "held", "retry_minutes": 60}
    no_code_anywhere(late.info)
    refused = late.consent()  # a page that posts consent anyway: nothing recorded
    assert refused["stored"] is False and refused["state"]["phase"] == "unavailable"
    no_code_anywhere(refused)
    assert held.rows("SELECT consented FROM participants WHERE external_id = 'late-participant'") == [(None,)]
    table = run_main("collect", "status", str(held.flow.study.path), "--db", str(held.db)).stdout
    assert "participants: 21 (20 consented; 1 not consented, 20 active, 0 complete, 0 excluded)" in table
    assert "answers received: 2 in the last minute, 2 in the last 10 minutes" in table  # fake-00's two words

    study, db = str(held.flow.study.path), str(held.db)
    said = run_main("collect", "release", study, "--db", db, "fake-00", "fake-01").stdout
    assert said.splitlines() == [
        "fake-00: 1 place(s) released (2 answer(s) to them kept)",
        "fake-01: 1 place(s) released (0 answer(s) to them kept)",
    ]
    again = run_main("collect", "release", study, "--db", db, "fake-00").stdout
    assert again.strip() == "fake-00: holds no place (active)"

    assert late.get_state() == {"phase": "consent"}
    state = late.consent()["state"]
    assert state["phase"] == "item" and state["view"]["context"] == "The"
    words = []
    while state["phase"] == "item":
        words.append(f"w{state['step']}")
        state = late.answer(state, words[-1])
    assert state == {
        "phase": "complete", "items_done": 1, "early": False, "code": "PAID-CODE",
        "url": "https://example.org/done?cc=PAID-CODE",
    }  # fmt: skip

    # fake-00 comes back: its released passage is not continued; it gets the other freed place.
    back = fakes[0].get_state()
    assert back["phase"] == "item" and back["step"] == 0 and back["seq"] != first["seq"]
    stored = answers_in_db(held)
    assert stored[:2] == [("fake-00", first["seq"], 0, "dog"), ("fake-00", first["seq"], 1, "ran")]
    assert [s[3] for s in stored[2:]] == words and len(set(s[:3] for s in stored)) == len(stored)
    item_rows = held.rows(
        "SELECT a.item_id, COUNT(*) FROM assignments a WHERE a.role = 'main' AND a.released IS NULL "
        "AND a.pid IN (SELECT pid FROM participants WHERE status != 'excluded') GROUP BY a.item_id ORDER BY 1"
    )
    assert sum(n for _, n in item_rows) == 20 and max(n for _, n in item_rows) == 5  # no item over its target


def test_an_excluded_participant_gets_their_own_code_never_the_completion_code(held: Running) -> None:
    cheat = Person(held, "cheat")
    state = cheat.consent()["state"]
    state = cheat.answer(state, "xx")
    said = run_main(
        "collect", "exclude", str(held.flow.study.path), "--db", str(held.db), "cheat", "--reason", "typed xx"
    ).stdout
    assert said.strip() == (
        "cheat: excluded (active before; 1 place(s) freed; 1 answer(s) kept in the database, not exported)"
    )
    excluded = cheat.get_state()
    assert excluded == {"phase": "excluded", "by": "organiser", "code": "SCREENED-OUT", "url": None}
    assert "PAID-CODE" not in json.dumps(cheat.info)
    refused = cheat.client.post(
        "/api/answer",
        content=json.dumps({"seq": state["seq"], "step": state["step"], "answer": "yy"}).encode(),
        headers={"X-CSRF-Token": cheat.info["csrf"], "Content-Type": "application/json"},
    )
    assert refused.status_code == 409  # nothing more is stored
    assert answers_in_db(held) == [("cheat", state["seq"], 0, "xx")]
    assert held.rows("SELECT status, excluded_reason FROM participants") == [
        ("excluded", "excluded by the organiser: typed xx")
    ]
    report = json.loads(run_main("collect", "status", str(held.flow.study.path), "--db", str(held.db), "--json").stdout)
    assert report["participants"]["excluded"] == 1 and report["items"][0]["in_progress"] == 0
    unknown = run_main("collect", "exclude", str(held.flow.study.path), "--db", str(held.db), "nobody", check=False)
    assert unknown.returncode == 2 and "no participant 'nobody' in study 'hold-test'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1


def test_an_excluded_participant_without_an_excluded_code_gets_no_code(tmp_path: Path) -> None:
    study = HOLD_STUDY.replace(", excluded_code: SCREENED-OUT", "")
    with running_server(write_study(tmp_path, study, HOLD_TEXTS)) as server:
        person = Person(server, "p1")
        person.consent()
        run_main("collect", "exclude", str(server.flow.study.path), "--db", str(server.db), "p1")
        assert person.get_state() == {"phase": "excluded", "by": "organiser", "code": None, "url": None}


def test_status_and_export_read_a_database_whose_study_file_changed(tmp_path: Path) -> None:
    path = write_study(tmp_path, HOLD_STUDY, HOLD_TEXTS)
    with running_server(path) as server:
        person = Person(server, "p1")
        state = person.consent()["state"]
        while state["phase"] == "item":
            state = person.answer(state, "word")
        n_answers = len(answers_in_db(server))
    db = str(path.with_suffix(".sqlite"))
    path.write_text(HOLD_STUDY.replace("a study of reading", "a study of reading (typo fixed)"), encoding="utf-8")
    status = run_main("collect", "status", str(path), "--db", db)
    assert status.stderr.startswith(f"warning: {path} changed since the server last started on {db} (consent)")
    assert "participants: 1 (1 consented; 0 not consented, 0 active, 1 complete, 0 excluded)" in status.stdout
    # An unsafe edit (the kind) still lets the organiser read and export: as the study was served.
    path.write_text(HOLD_STUDY.replace("kind: passage_cloze", "kind: sentence_completion"), encoding="utf-8")
    out = tmp_path / "export"
    exported = run_main("collect", "export", str(path), "--db", db, "--out", str(out))
    assert "(kind)" in exported.stderr and "read as the study was served" in exported.stderr
    assert exported.stdout.startswith(f"exported {n_answers} responses of 1 participants (passage_cloze)")
    # serve refuses the unsafe edit in one line naming the field, and accepts the safe one.
    served = run_main("collect", "serve", str(path), "--db", db, "--port", "0", check=False)
    assert served.returncode == 2 and "field 'kind' changed since the study started" in served.stderr
    path.write_text(HOLD_STUDY.replace("participants_per_item: 5", "participants_per_item: 8"), encoding="utf-8")
    assert open_study(path, Path(db)).study.participants_per_item == 8
    again = run_main("collect", "export", str(path), "--db", db, "--out", str(out))  # an earlier export's folder
    assert again.stderr == ""
    edits = json.loads((out / "manifest.json").read_text())["study_edits"]
    assert [e["fields"] for e in edits] == [["participants_per_item"]] and edits[0]["to"] != edits[0]["from"]
    assert run_main("collect", "status", str(path), "--db", db).stderr == ""  # continued: no warning any more
    assert len(StudyStore(Path(db)).responses()) == n_answers


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_database_and_its_wal_files_are_readable_by_the_owner_only(held: Running) -> None:
    person = Person(held, "p1")
    person.answer(person.consent()["state"], "word")
    files = [held.db, Path(f"{held.db}-wal"), Path(f"{held.db}-shm")]
    assert all(f.is_file() for f in files)
    assert [_mode(f) for f in files] == [0o600, 0o600, 0o600]


def test_an_existing_world_readable_database_is_tightened(tmp_path: Path) -> None:
    path = write_study(tmp_path, HOLD_STUDY, HOLD_TEXTS)
    db = tmp_path / "old.sqlite"
    sqlite3.connect(db).close()
    os.chmod(db, 0o644)
    open_study(path, db)
    assert _mode(db) == 0o600
