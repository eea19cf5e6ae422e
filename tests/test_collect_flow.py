"""The study flow by hand, without HTTP (``harness/collect/flow.py``): who gets which item, resuming, exclusion,
released sessions, refused replays, a changed study, and the study file's one-line errors.

Why by hand: balanced assignment and refusing a replayed answer are what make the collected data right, so each
rule is checked on a study small enough that the exact items every participant gets can be written down."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.collect.flow import Participant, Refused, StudyFlow
from harness.collect.prepare import open_study
from harness.collect.status import progress
from harness.collect.store import StudyStore
from harness.collect.study import load_study
from harness.errors import HarnessError

TEXTS = "id,text\na,The cat sat on the mat.\nb,Dogs like to run in the park.\nc,It was a cold night.\n"
BASE = "consent: I agree.\ninstructions: Type the missing word.\ntexts: {file: texts.csv}\n"


def study_file(tmp_path: Path, body: str, texts: str = TEXTS) -> Path:
    (tmp_path / "texts.csv").write_text(texts, encoding="utf-8")
    path = tmp_path / "study.yaml"
    path.write_text(BASE + body, encoding="utf-8")
    return path


def sentences(tmp_path: Path, body: str = "", texts: str = TEXTS, **kwargs: Any) -> StudyFlow:
    """A sentence-completion study (one step per item) over ``texts``."""
    path = study_file(tmp_path, "study: s\nkind: sentence_completion\n" + body, texts)
    flow = open_study(path, tmp_path / "study.sqlite")
    return StudyFlow(flow.study, flow.store, **kwargs) if kwargs else flow


def start(flow: StudyFlow, external_id: str) -> Participant:
    person = flow.join(external_id)
    flow.consent(person)
    return person


def finish(
    flow: StudyFlow, person: Participant, answer: Callable[[dict[str, Any]], Any] = lambda s: "word"
) -> list[str]:
    """Answer every step until the participant is done; the main items they got, in order."""
    got = []
    state = flow.state(person)
    while state["phase"] == "item":
        if state["step"] == 0 and state["role"] == "main":
            got.append(item_of(flow, person, state["seq"]))
        state = flow.answer(person, state["seq"], state["step"], answer(state))["state"]
    return got


def item_of(flow: StudyFlow, person: Participant, seq: int) -> str:
    row = (
        flow.store.read()
        .execute("SELECT item_id FROM assignments WHERE pid = ? AND seq = ?", (person.pid, seq))
        .fetchone()
    )
    return str(row[0])


def test_balanced_assignment_gives_each_participant_the_least_covered_items(tmp_path: Path) -> None:
    flow = sentences(tmp_path, "participants_per_item: 2\nitems_per_participant: 2\n")
    got = {pid: finish(flow, start(flow, pid)) for pid in ("p1", "p2", "p3", "p4")}
    # p1: a (all at 0), then b (a at 1); p2: c (the only one at 0), then a (all at 1, study order); p3: b (a is full),
    # then c; p4: nothing is left (every item at its target of 2).
    assert got == {"p1": ["a", "b"], "p2": ["c", "a"], "p3": ["b", "c"], "p4": []}
    # p4 is turned away before consent (no code: they did nothing), and their consent is not recorded.
    assert flow.state(flow.join("p4")) == {"phase": "unavailable", "reason": "full", "retry_minutes": None}
    assert flow.consent(flow.join("p4"))["stored"] is False
    report = progress(flow)
    assert [(i["item_id"], i["finished"], i["target"]) for i in report["items"]] == [
        ("a", 2, 2),
        ("b", 2, 2),
        ("c", 2, 2),
    ]
    assert report["complete"] and report["participants"]["complete"] == 3
    assert report["participants"]["not_consented"] == 1 and report["participants"]["consented"] == 3


def test_participants_at_once_are_spread_and_nobody_gets_an_item_twice(tmp_path: Path) -> None:
    flow = sentences(tmp_path, "participants_per_item: 3\nitems_per_participant: 3\n")
    people = [start(flow, f"p{i}") for i in range(4)]
    first = [item_of(flow, p, flow.state(p)["seq"]) for p in people]
    assert first == ["a", "b", "c", "a"]  # each took the least covered item when it arrived
    for p in people:
        finish(flow, p)
    rows = flow.store.read().execute("SELECT pid, item_id FROM assignments WHERE role = 'main'").fetchall()
    pairs = [(r["pid"], r["item_id"]) for r in rows]
    assert len(pairs) == len(set(pairs)) == 9  # 3 items x 3 people, no item twice to anyone
    assert sorted(r["item_id"] for r in rows) == ["a"] * 3 + ["b"] * 3 + ["c"] * 3


def test_an_items_own_participants_column_is_its_target(tmp_path: Path) -> None:
    texts = "id,text,n\na,The cat sat on the mat.,1\nb,Dogs like to run in the park.,3\nc,It was a cold night.,\n"
    path = study_file(tmp_path, "study: s\nkind: sentence_completion\nparticipants_per_item: 9\n"
                      "items_per_participant: 1\n", texts)  # fmt: skip
    path.write_text(path.read_text().replace("texts: {file: texts.csv}", "texts: {file: texts.csv, participants: n}"))
    with pytest.raises(HarnessError, match=r"texts.csv: line 4: field 'n': missing"):
        open_study(path, tmp_path / "own.sqlite")
    (tmp_path / "texts.csv").write_text(texts.replace("night.,\n", "night.,2\n"), encoding="utf-8")
    flow = open_study(path, tmp_path / "own.sqlite")
    got = [finish(flow, start(flow, f"p{i}")) for i in range(7)]
    # a wants 1 person, b 3, c 2 (the study's 9 is not used): 6 people fill the study, the 7th finds it full.
    assert got == [["a"], ["b"], ["c"], ["b"], ["c"], ["b"], []]
    assert [(i["item_id"], i["target"], i["finished"]) for i in progress(flow)["items"]] == [
        ("a", 1, 1), ("b", 3, 3), ("c", 2, 2),
    ]  # fmt: skip


def test_joining_again_with_the_same_id_resumes_where_the_participant_was(tmp_path: Path) -> None:
    path = study_file(tmp_path, "study: s\nkind: passage_cloze\nparticipants_per_item: 2\nitems_per_participant: 2\n")
    flow = open_study(path, tmp_path / "study.sqlite")
    person = start(flow, "PID-1")
    state = flow.state(person)
    flow.answer(person, state["seq"], 0, "cat")
    flow.answer(person, state["seq"], 1, "sat")
    again = open_study(path, tmp_path / "study.sqlite")  # a restarted server on the same database
    back = again.join("PID-1")
    assert (back.pid, back.session, back.csrf, back.consented) == (person.pid, person.session, person.csrf, True)
    resumed = again.state(back)
    assert (resumed["seq"], resumed["step"], resumed["view"]) == (
        state["seq"], 2, {"context": "The cat sat", "position": 4},
    )  # fmt: skip
    assert len(again.store.participants()) == 1


def test_failing_an_attention_check_excludes_and_frees_the_items(tmp_path: Path) -> None:
    flow = sentences(
        tmp_path,
        "participants_per_item: 1\nitems_per_participant: 1\n"
        "attention_checks: {every: 1, max_failures: 0, items: [{text: 'Type apple:', answer: [apple, apples]}]}\n",
    )
    careless = start(flow, "careless")
    assert finish(flow, careless, lambda s: "pear" if s["role"] == "catch" else "mat") == ["a"]
    # Never the completion code:
    assert flow.state(careless) == {"phase": "excluded", "by": "checks", "code": None, "url": None}
    people = {p["external_id"]: p for p in flow.store.participants()}
    assert people["careless"]["status"] == "excluded"
    assert people["careless"]["excluded_reason"] == "failed 1 attention check(s), more than the 0 allowed"
    # Item a is free again: the next participant gets it, and passes the check (case and space ignored).
    careful = start(flow, "careful")
    assert finish(flow, careful, lambda s: " Apples " if s["role"] == "catch" else "mat") == ["a"]
    report = progress(flow)
    assert report["excluded"] == [{"participant": "careless", "reason": people["careless"]["excluded_reason"]}]
    assert report["participants"] == {
        "total": 2, "consented": 2, "not_consented": 0, "active": 0, "complete": 1, "excluded": 1,
    }  # fmt: skip
    assert report["items"][0]["finished"] == 1 and report["responses"] == {"stored": 4, "main": 1}


def test_a_place_is_held_from_its_assignment_and_polling_does_not_extend_it(tmp_path: Path) -> None:
    now = [1_000_000.0]
    flow = sentences(
        tmp_path,
        "participants_per_item: 1\nitems_per_participant: 1\ntime_limits: {session_minutes: 30}\n",
        texts="id,text\na,The cat sat on the mat.\nb,Dogs like to run in the park.\n",
        clock=lambda: now[0],
    )
    gone = start(flow, "gone")  # holds a from consent on
    assert item_of(flow, gone, flow.state(gone)["seq"]) == "a"
    assert finish(flow, start(flow, "second")) == ["b"]
    for _ in range(29):  # the page polls every minute: the hold is not refreshed
        now[0] += 60
        assert flow.state(gone)["phase"] == "item"
    third = flow.join("third")
    assert flow.state(third) == {"phase": "unavailable", "reason": "held", "retry_minutes": 1}
    assert flow.consent(third)["stored"] is False
    assert progress(flow)["items"][0]["in_progress"] == 1
    now[0] += 2 * 60  # 31 minutes after its assignment, a holds no place: it goes to the next participant
    assert progress(flow)["items"][0]["in_progress"] == 0 and progress(flow)["items"][0]["released"] == 1
    assert finish(flow, start(flow, "third")) == ["a"]
    assert progress(flow)["items"][0] == {
        "item_id": "a", "target": 1, "finished": 1, "in_progress": 0, "released": 1, "steps": 1,
    }  # fmt: skip
    # The participant who left comes back: the item is still theirs to finish, and their answer is stored.
    back = flow.join("gone")
    assert flow.state(back)["view"]["context"] == "The cat sat on the"
    assert finish(flow, back) == ["a"]
    assert flow.state(back) == {"phase": "complete", "items_done": 1, "early": False, "code": None, "url": None}
    assert progress(flow)["items"][0]["finished"] == 2
    rows = flow.store.read().execute("SELECT pid, seq, step, COUNT(*) FROM responses GROUP BY pid, seq, step")
    assert [r[3] for r in rows] == [1, 1, 1]  # three answers, none twice


def test_a_replayed_answer_is_refused_with_409_and_stored_once(tmp_path: Path) -> None:
    flow = sentences(tmp_path, "participants_per_item: 1\nitems_per_participant: 2\n")
    person = start(flow, "p1")
    state = flow.state(person)
    first = flow.answer(person, state["seq"], state["step"], "mat", 1500)
    assert first["stored"] and first["feedback"] == {"target": "mat.", "correct": False}
    with pytest.raises(Refused) as replay:
        flow.answer(person, state["seq"], state["step"], "mat", 1500)
    assert replay.value.status == 409
    with pytest.raises(Refused) as wrong_step:
        flow.answer(person, first["state"]["seq"], first["state"]["step"] + 1, "park")
    assert wrong_step.value.status == 409 and "current one is item 1, step 0" in wrong_step.value.message
    with pytest.raises(Refused) as future_item:
        flow.answer(person, first["state"]["seq"] + 1, 0, "park")
    assert future_item.value.status == 409
    stored = flow.store.responses()
    assert [(r["seq"], r["step"], r["answer"], r["client_ms"]) for r in stored] == [(state["seq"], 0, "mat", 1500)]


def test_a_running_study_accepts_safe_edits_and_refuses_the_rest_naming_the_field(tmp_path: Path) -> None:
    path = study_file(tmp_path, "study: s\nkind: sentence_completion\nparticipants_per_item: 2\n")
    db = tmp_path / "study.sqlite"
    flow = open_study(path, db)
    finish(flow, start(flow, "p1"))
    open_study(path, db)  # the same study: fine (a comment or a reordering would not matter either)
    original = path.read_text()
    path.write_text(
        original.replace("participants_per_item: 2", "participants_per_item: 3").replace(
            "consent: I agree.", "consent: I agree to take part."
        )
        + "time_limits: {session_minutes: 200}\n"
    )
    edited = open_study(path, db)  # more people per item, a consent typo, a longer hold: continued
    assert edited.study.participants_per_item == 3 and edited.study.consent == "I agree to take part."
    assert [e["fields"] for e in edited.store.edits()] == [
        ["consent", "participants_per_item", "time_limits.session_minutes"]
    ]
    unsafe = {
        "participants_per_item: 3": ("participants_per_item: 1", "field 'participants_per_item' lowered from 3 to 1"),
        "kind: sentence_completion": ("kind: passage_cloze", "field 'kind' changed"),
        "session_minutes: 200": ("session_minutes: 100", "field 'time_limits.session_minutes' lowered from 200"),
        "time_limits: {": ("time_limits: {response_seconds: 9, ", "field 'time_limits.response_seconds' changed"),
    }
    good = path.read_text()
    for old, (new, message) in unsafe.items():
        path.write_text(good.replace(old, new))
        with pytest.raises(HarnessError, match=re.escape(message) + ".*undo the change, or give a new --db"):
            open_study(path, db)
    path.write_text(good)
    (tmp_path / "texts.csv").write_text(TEXTS.replace("cold", "warm"), encoding="utf-8")  # the texts count too
    with pytest.raises(HarnessError, match=r"field 'texts.file \(its content\)' changed"):
        open_study(path, db)
    path.write_text(good.replace("study: s", "study: other"))
    with pytest.raises(HarnessError, match="holds study 's', not 'other'"):
        open_study(path, db)
    assert len(StudyStore(db).responses()) == 3  # nothing stored was touched


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ("participants_per_itme: 3\n", "participants_per_itme", "unknown field"),
        ("participants_per_item: 0\n", "participants_per_item", "expected a positive integer, got 0"),
        ("time_limits: {response_secs: 3}\n", "time_limits", "unknown key 'response_secs'"),
        ("attention_checks: {every: 2, items: [{text: hi}]}\n", "attention_checks.items[0]", "answer': missing"),
        ("completion: {url: 'ftp://x'}\n", "completion.url", "expected an http(s) URL"),
        ("completion: {excluded_url: 'x'}\n", "completion.excluded_url", "expected an http(s) URL"),
        ("completion: {excluded: 'x'}\n", "completion", "unknown key 'excluded'"),
        ("title: ''\n", "title", "expected a text, got an empty one"),
    ],
)
def test_study_file_errors_are_one_line_naming_the_file_and_the_field(
    tmp_path: Path, body: str, field: str, says: str
) -> None:
    path = study_file(tmp_path, "study: s\nkind: sentence_completion\n" + body)
    with pytest.raises(HarnessError) as caught:
        load_study(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert f"'{field}'" in message and says in message


def test_missing_fields_and_a_wrong_kind_name_the_field(tmp_path: Path) -> None:
    path = study_file(tmp_path, "study: s\nkind: cloze\n")
    with pytest.raises(HarnessError, match=r"study.yaml: field 'kind': expected one of 'passage_cloze'"):
        load_study(path)
    path.write_text("study: s\nkind: passage_cloze\ntexts: {file: texts.csv}\ninstructions: i\n")
    with pytest.raises(HarnessError, match=r"study.yaml: field 'consent': missing"):
        load_study(path)
    path.write_text(BASE.replace("texts.csv", "nope.csv") + "study: s\nkind: passage_cloze\n")
    with pytest.raises(HarnessError, match=r"field 'texts'.file: no such file .*nope.csv"):
        load_study(path)


def test_a_study_full_only_for_now_lets_a_participant_come_back_for_a_place_freed_later(tmp_path: Path) -> None:
    """One item, one place: while p1 holds it, p2 is turned away before consent (no code, not marked complete);
    once p1's hold is over, p2 coming back consents and gets the item."""
    body = "participants_per_item: 1\nitems_per_participant: 1\ntime_limits: {session_minutes: 1}\n"
    flow = sentences(tmp_path, body, "id,text\na,The cat sat on the mat\n")
    now = [1000.0]
    flow.clock = lambda: now[0]
    first = start(flow, "p1")
    assert flow.state(first)["phase"] == "item"
    second = start(flow, "p2")
    assert flow.state(second) == {"phase": "unavailable", "reason": "held", "retry_minutes": 1}
    assert flow.by_session(second.session).consented is False  # type: ignore[union-attr]
    now[0] += 61  # p1's hold is over
    assert flow.state(second)["phase"] == "consent"
    assert flow.consent(second)["state"]["phase"] == "item"
    assert item_of(flow, second, flow.state(second)["seq"]) == "a"


def test_answers_keep_word_joiners_and_refuse_line_separators_and_bidi_overrides() -> None:
    from harness.collect.flow import Refused, clean_text

    assert clean_text("می\u200cخواهم", "answer") == "می\u200cخواهم"  # Persian needs the zero-width non-joiner
    for bad in ("a\u2028b", "a\u2029b", "a\u202eb", "a\u200bb", "a\x07b", "a\ud800b"):
        with pytest.raises(Refused) as refused:
            clean_text(bad, "answer")
        assert refused.value.status == 422


def test_the_place_is_checked_before_consent_and_held_through_the_practice(tmp_path: Path) -> None:
    """One item, one place, two practice items: p1's consent takes the place, so p2, arriving while p1 practises,
    is turned away before consent and practice (no slot, no answer of p2 anywhere); p1 then gets the held item."""
    body = "participants_per_item: 1\nitems_per_participant: 1\npractice: ['One two three.', 'Four five six.']\n"
    flow = sentences(tmp_path, body, "id,text\na,The cat sat on the mat\n")
    p1 = start(flow, "p1")
    state = flow.state(p1)
    assert (state["role"], state["seq"]) == ("practice", 0)
    held = flow.store.read().execute("SELECT seq, item_id, role FROM assignments WHERE pid = ?", (p1.pid,)).fetchall()
    # The main item is assigned at consent, after the two practice slots; the first practice slot is open.
    assert sorted((r["seq"], r["role"]) for r in held) == [(0, "practice"), (2, "main")]
    assert [r["item_id"] for r in held if r["role"] == "main"] == ["a"]
    p2 = flow.join("p2")
    assert flow.state(p2) == {"phase": "unavailable", "reason": "held", "retry_minutes": 120}
    assert flow.consent(p2)["stored"] is False
    assert flow.store.read().execute("SELECT COUNT(*) FROM assignments WHERE pid = ?", (p2.pid,)).fetchone()[0] == 0
    roles = []
    while state["phase"] == "item":
        roles.append(state["role"])
        state = flow.answer(p1, state["seq"], state["step"], "word")["state"]
    assert roles == ["practice", "practice", "main"] and state["phase"] == "complete"
    rows = flow.store.read().execute("SELECT pid, seq, step FROM responses ORDER BY rid").fetchall()
    assert [tuple(r) for r in rows] == [(p1.pid, 0, 0), (p1.pid, 1, 0), (p1.pid, 2, 0)]
