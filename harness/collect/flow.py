"""What a participant does next, and storing what they answered: the study's logic, with no HTTP in it.

Why here and not in the server: resuming, balanced assignment and refusing a replayed answer are what make the
data right, so they are tested directly (``tests/test_collect_flow.py``) and the server only maps requests onto
them. A participant's items are a sequence of slots (``seq``): every practice item, then main items with an
attention check after every ``attention_every`` of them. Each slot is chosen in one transaction, so coverage counts
are exact under any number of participants at once:

* a place is checked for before consent, and the first main item is assigned at consent (before the practice), so
  nobody practises and is then turned away; a participant turned away before doing any item gets no completion
  code (``unavailable``: every place is held, or the study is full);
* the next main item is the least covered one the participant has not had (ties: the study's order), where an
  item's coverage counts finished assignments and those still holding their place, of participants not excluded;
  an item at ``participants_per_item`` is not given again;
* a place is held for ``session_minutes`` from its assignment, however often the page polls, so ids that keep a
  tab open cannot hold a study for ever; a participant who comes back later continues their item (their answers
  count when they finish it), and the organiser can release a place at once (``harness.collect.organiser``).
"""

from __future__ import annotations

import hashlib
import math
import secrets
import sqlite3
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.collect.items import Item, passes_check, target, view
from harness.collect.store import StudyStore
from harness.collect.study import JUDGMENT_PERCENTS, MAX_ANSWER_CHARS, Study

MAX_EXTERNAL_ID_CHARS = 64
#: How an exclusion by the organiser (``harness collect exclude``) starts its reason: the page then says so, rather
#: than blaming attention checks.
ORGANISER_EXCLUSION = "excluded by the organiser"
#: An assignment ``a`` that holds its place: open, not released by the organiser, made after ``:cutoff``
#: (``StudyFlow.hold_cutoff``). The one definition the flow assigns by and ``status`` reports.
HOLDING = "(a.finished IS NULL AND a.released IS NULL AND a.assigned >= :cutoff)"


class Refused(Exception):
    """A request the study refuses: ``status`` is the HTTP status the server answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Participant:
    pid: int
    external_id: str
    session: str
    csrf: str
    consented: bool
    status: str


def clean_text(value: Any, what: str, max_chars: int = MAX_ANSWER_CHARS, *, keep_leading_space: bool = False) -> str:
    """A participant's text: a string of at most ``max_chars`` characters with no control characters (NFC), its
    surrounding space removed (a guessed token keeps its leading space: it is part of the token)."""
    if not isinstance(value, str):
        raise Refused(422, f"{what}: expected a string")
    if len(value) > max_chars:  # a field too long (422), not a body too large (413, the server's own check)
        raise Refused(422, f"{what}: longer than {max_chars} characters")
    if any(_refused_character(c) for c in value):
        raise Refused(422, f"{what}: control, format or unassigned characters are not accepted")
    text = unicodedata.normalize("NFC", value)
    return text.rstrip() if keep_leading_space and text.strip() else text.strip()


#: Format characters a word may need: the zero-width non-joiner and joiner (Persian, Hindi, emoji sequences).
_WORD_FORMAT_CHARACTERS = frozenset("\u200c\u200d")
#: Refused: controls, surrogates, private use, unassigned, the line and paragraph separators (a JSON Lines reader
#: that splits on them would break an export's line) and every other format character (bidirectional overrides,
#: zero-width spaces, byte order marks).
_REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Co", "Cn", "Zl", "Zp", "Cf"})


def _refused_character(c: str) -> bool:
    return unicodedata.category(c) in _REFUSED_CATEGORIES and c not in _WORD_FORMAT_CHARACTERS


class StudyFlow:
    """The study's logic over its store. ``clock`` is injectable so tests can age sessions."""

    def __init__(self, study: Study, store: StudyStore, clock: Callable[[], float] = time.time) -> None:
        self.study = study
        self.store = store
        self.clock = clock
        self.items = {item.item_id: item for item in store.items()}
        self.practice = [i.item_id for i in store.items("practice")]
        self.checks = [i.item_id for i in store.items("catch")]

    # ------------------------------------------------------------------------------------------------ participants
    def join(self, external_id: str | None) -> Participant:
        """The participant with this platform id (coming back: the same participant), or a new one. Without an id,
        a generated one."""
        if external_id is not None:
            external_id = clean_text(external_id, "participant id", MAX_EXTERNAL_ID_CHARS)
            if not external_id:
                external_id = None
        with self.store.write() as db:
            if external_id is not None:
                row = db.execute("SELECT * FROM participants WHERE external_id = ?", (external_id,)).fetchone()
                if row is not None:
                    return _participant(row)
            source = "url" if external_id is not None else "generated"
            external_id = external_id or f"anon-{secrets.token_hex(8)}"
            db.execute(
                "INSERT INTO participants (external_id, id_source, session, csrf, created) VALUES (?, ?, ?, ?, ?)",
                (external_id, source, secrets.token_urlsafe(24), secrets.token_urlsafe(24), self.clock()),
            )
            row = db.execute("SELECT * FROM participants WHERE external_id = ?", (external_id,)).fetchone()
            return _participant(row)

    def is_known(self, external_id: str) -> bool:
        """Whether a participant with this platform id (as given in the link) already joined: coming back is not
        a new join (the server limits how fast new participants may join from one address)."""
        try:  # the id as ``join`` would store it
            key = clean_text(external_id, "participant id", MAX_EXTERNAL_ID_CHARS)
        except Refused:
            return False  # ``join`` refuses it, in its own words
        row = self.store.read().execute("SELECT 1 FROM participants WHERE external_id = ?", (key,)).fetchone()
        return row is not None

    def by_session(self, session: str | None) -> Participant | None:
        if not session or len(session) > 100:
            return None
        row = self.store.read().execute("SELECT * FROM participants WHERE session = ?", (session,)).fetchone()
        return None if row is None else _participant(row)

    def consent(self, participant: Participant) -> dict[str, Any]:
        """Record consent when a place is free, and hold the participant's first main item from now on, so the
        practice that follows is never done for nothing; with no place free nothing is recorded and the state
        says why (``unavailable``). Returns ``{"stored": bool, "state": ...}``."""
        with self.store.write() as db:
            person = db.execute("SELECT * FROM participants WHERE pid = ?", (participant.pid,)).fetchone()
            stored = person["consented"] is not None
            if not stored and person["status"] == "active" and self._unavailable(db, participant.pid) is None:
                db.execute("UPDATE participants SET consented = ? WHERE pid = ?", (self.clock(), participant.pid))
                self._hold_first_item(db, participant.pid)
                stored = True
            return {"stored": stored, "state": self._state(db, participant.pid)}

    # ------------------------------------------------------------------------------------------------ state
    def state(self, participant: Participant) -> dict[str, Any]:
        """Where the participant is (docs/collect.md, "End pages"): ``consent`` (a place is free), ``unavailable``
        (turned away before any item: no code), an ``item`` step to answer, ``complete`` or ``excluded``."""
        with self.store.write() as db:
            return self._state(db, participant.pid)

    def _state(self, db: sqlite3.Connection, pid: int) -> dict[str, Any]:
        person = db.execute("SELECT * FROM participants WHERE pid = ?", (pid,)).fetchone()
        if person["status"] == "excluded":
            by = "organiser" if str(person["excluded_reason"] or "").startswith(ORGANISER_EXCLUSION) else "checks"
            return {"phase": "excluded", "by": by, "code": self.study.excluded_code, "url": self.study.excluded_url}
        if person["consented"] is None:
            reason = self._unavailable(db, pid)
            return {"phase": "consent"} if reason is None else self._unavailable_state(db, reason)
        if person["status"] == "active":
            slot = self._current_slot(db, pid)
            if slot is not None:
                return self._item_state(db, pid, slot)
        n_done = int(db.execute(
            "SELECT COUNT(*) FROM assignments WHERE pid = ? AND role = 'main' AND finished IS NOT NULL", (pid,)
        ).fetchone()[0])  # fmt: skip
        if person["status"] == "active":
            if n_done == 0:  # no item done: turned away, without a code
                return self._unavailable_state(db, self._unavailable(db, pid) or "held")
            db.execute("UPDATE participants SET status = 'complete', completed = ? WHERE pid = ?", (self.clock(), pid))
        return {
            "phase": "complete",
            "items_done": n_done,
            # The study filled before the participant reached their number of items: they are paid for what they did.
            "early": n_done < self.study.items_per_participant,
            "code": self.study.completion_code,
            "url": self.study.completion_url,
        }

    def _unavailable(self, db: sqlite3.Connection, pid: int) -> str | None:
        """Why the participant can be given no main item now: ``held`` (every place left is held by someone in
        progress; one may free up), ``full`` (every item has its people), or None (a place is free)."""
        if self._item_below_target(db, pid, live=True) is not None:
            return None
        return "held" if self._item_below_target(db, pid, live=False) is not None else "full"

    def _unavailable_state(self, db: sqlite3.Connection, reason: str) -> dict[str, Any]:
        """Turned away: no code and no return link (they did nothing to be paid for); ``retry_minutes`` says when
        the first held place is released at the latest."""
        retry = None
        if reason == "held":
            cutoff = self.hold_cutoff()
            first = db.execute(
                f"SELECT MIN(a.assigned) FROM assignments a WHERE a.role = 'main' AND {HOLDING}", {"cutoff": cutoff}
            ).fetchone()[0]
            if first is not None:
                retry = max(1, math.ceil((first - cutoff) / 60))  # released at first + hold = now + (first - cutoff)
        return {"phase": "unavailable", "reason": reason, "retry_minutes": retry}

    def hold_cutoff(self) -> float:
        """Assignments made before this time hold no place any more: a place is held for ``session_minutes`` from
        its assignment, however often the participant's page asks for its state (polling does not extend it)."""
        return self.clock() - 60.0 * self.study.session_minutes

    def _hold_first_item(self, db: sqlite3.Connection, pid: int) -> None:
        """At consent: assign the first main item now, after the practice slots (``seq`` = number of practice
        items), so its place is held while the participant reads the instructions and practises."""
        if self.study.items_per_participant and db.execute(
            "SELECT 1 FROM assignments WHERE pid = ? AND role = 'main'", (pid,)
        ).fetchone() is None:  # fmt: skip
            item_id = self._item_below_target(db, pid, live=True)
            if item_id is not None:
                now = self.clock()
                db.execute(
                    "INSERT INTO assignments (pid, seq, item_id, role, assigned, touched) VALUES (?, ?, ?, ?, ?, ?)",
                    (pid, len(self.practice), item_id, "main", now, now),
                )

    def _current_slot(self, db: sqlite3.Connection, pid: int) -> sqlite3.Row | None:
        """The participant's open slot, or a new one: the practice items in order, then the open main item (the
        one held at consent first), then new main items with an attention check after every ``attention_every``.
        A slot the organiser released (``harness collect release``) is not continued."""
        now = self.clock()
        slots = db.execute("SELECT * FROM assignments WHERE pid = ? ORDER BY seq", (pid,)).fetchall()
        practice = [r for r in slots if r["role"] == "practice"]
        open_practice = next((r for r in practice if r["finished"] is None), None)
        if open_practice is None and len(practice) < len(self.practice):
            seq = len(practice)
            db.execute(
                "INSERT INTO assignments (pid, seq, item_id, role, assigned, touched) VALUES (?, ?, ?, ?, ?, ?)",
                (pid, seq, self.practice[seq], "practice", now, now),
            )
            return db.execute("SELECT * FROM assignments WHERE pid = ? AND seq = ?", (pid, seq)).fetchone()
        open_slot = open_practice or next((r for r in slots if r["finished"] is None and r["released"] is None), None)
        if open_slot is not None:
            return open_slot
        n_main = sum(r["role"] == "main" and r["released"] is None for r in slots)
        n_catch = sum(r["role"] == "catch" for r in slots)
        every = self.study.attention_every
        if self.checks and every and n_main and n_main % every == 0 and n_catch < n_main // every:
            item_id, role = self.checks[n_catch % len(self.checks)], "catch"
        elif n_main < self.study.items_per_participant:
            chosen = self._item_below_target(db, pid, live=True)
            if chosen is None:
                return None
            item_id, role = chosen, "main"
        else:
            return None
        seq = max((r["seq"] for r in slots), default=-1) + 1
        db.execute(
            "INSERT INTO assignments (pid, seq, item_id, role, assigned, touched) VALUES (?, ?, ?, ?, ?, ?)",
            (pid, seq, item_id, role, now, now),
        )
        return db.execute("SELECT * FROM assignments WHERE pid = ? AND seq = ?", (pid, seq)).fetchone()

    def _item_below_target(self, db: sqlite3.Connection, pid: int, *, live: bool) -> str | None:
        """The least covered main item the participant has not had whose coverage is below its target (ties: the
        study's order), or None. Coverage counts the main assignments of participants not excluded that are
        finished, and with ``live`` those still holding their place (open, not released by the organiser, made
        less than ``session_minutes`` ago): who gets an item next. Without ``live``: whether a place may free up."""
        held = f"OR {HOLDING}" if live else ""
        row = db.execute(
            f"""
            SELECT i.item_id, COUNT(a.pid) AS coverage FROM items i
            LEFT JOIN assignments a ON a.item_id = i.item_id AND a.role = 'main'
                AND (a.finished IS NOT NULL {held})
                AND a.pid IN (SELECT pid FROM participants WHERE status != 'excluded')
            WHERE i.role = 'main'
                AND i.item_id NOT IN (SELECT item_id FROM assignments WHERE pid = :pid AND role = 'main')
            GROUP BY i.item_id HAVING coverage < COALESCE(i.participants, :target) ORDER BY coverage, i.ord LIMIT 1
            """,  # ``held`` is one fixed condition, never input
            {"pid": pid, "target": self.study.participants_per_item, "cutoff": self.hold_cutoff()},
        ).fetchone()
        return None if row is None else str(row["item_id"])

    def _item_state(self, db: sqlite3.Connection, pid: int, slot: sqlite3.Row) -> dict[str, Any]:
        item = self.items[slot["item_id"]]
        answered = db.execute(
            "SELECT COUNT(*) FROM responses WHERE pid = ? AND seq = ?", (pid, slot["seq"])
        ).fetchone()[0]
        shown = view(item, answered)
        if "pair" in shown:
            order = shown_order(pid, slot["seq"])
            shown["pair"] = shown["pair"] if order == "true_first" else shown["pair"][::-1]
        counts = dict.fromkeys(("practice", "main", "catch"), 0)
        for row in db.execute("SELECT role, COUNT(*) AS n FROM assignments WHERE pid = ? AND finished IS NOT NULL "
                              "GROUP BY role", (pid,)):  # fmt: skip
            counts[row["role"]] = row["n"]
        return {
            "phase": "item",
            "role": slot["role"],
            "seq": slot["seq"],
            "step": answered,
            "n_steps": item.n_steps,
            "view": shown,
            "done": {"practice": counts["practice"], "items": counts["main"]},
            "total": {"practice": len(self.practice), "items": self.study.items_per_participant},
            "score": self._score(db, pid) if self.study.kind == "next_token_game" else None,
        }

    def _score(self, db: sqlite3.Connection, pid: int) -> dict[str, int]:
        """The next-token game's running score (the original game showed it): correct guesses of the real items."""
        correct = total = 0
        for row in db.execute("SELECT r.item_id, r.step, r.answer FROM responses r JOIN assignments a USING (pid, seq) "
                              "WHERE r.pid = ? AND a.role = 'main'", (pid,)):  # fmt: skip
            total += 1
            correct += int(row["answer"] == target(self.items[row["item_id"]], row["step"]))
        return {"correct": correct, "total": total}

    # ------------------------------------------------------------------------------------------------ answers
    def answer(
        self, participant: Participant, seq: Any, step: Any, answer: Any, client_ms: Any = None, timed_out: Any = False
    ) -> dict[str, Any]:
        """Store one answer for the participant's current step, then say what comes next.

        ``seq`` and ``step`` must name the step the participant is on: an answer to a step already answered (a
        replayed request, a second tab) is refused with 409 and stores nothing."""
        if not _is_int(seq) or not _is_int(step):
            raise Refused(422, "seq and step: expected integers")
        if not isinstance(timed_out, bool):
            raise Refused(422, "timed_out: expected true or false")
        if client_ms is not None and (not _is_int(client_ms) or not 0 <= client_ms <= 86_400_000):
            raise Refused(422, "client_ms: expected an integer number of milliseconds from 0 to 86400000, or null")
        if answer is not None and not (isinstance(answer, str) or _is_int(answer)):
            raise Refused(422, "answer: expected a string, an integer or null")
        if isinstance(answer, str) and len(answer) > MAX_ANSWER_CHARS:
            raise Refused(422, f"answer: longer than {MAX_ANSWER_CHARS} characters")
        with self.store.write() as db:
            state = self._state(db, participant.pid)
            if state["phase"] != "item":
                raise Refused(409, f"nothing to answer: the participant is at '{state['phase']}'")
            if (seq, step) != (state["seq"], state["step"]):
                raise Refused(
                    409, f"not the current step (the current one is item {state['seq']}, step {state['step']})"
                )
            item = self.items[db.execute("SELECT item_id FROM assignments WHERE pid = ? AND seq = ?",
                                         (participant.pid, seq)).fetchone()[0]]  # fmt: skip
            text, judgment, order = self._check_answer(item, participant.pid, seq, answer, timed_out)
            db.execute(
                "INSERT INTO responses (pid, seq, item_id, step, answer, judgment, shown_order, timed_out, client_ms, "
                "received) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    participant.pid,
                    seq,
                    item.item_id,
                    step,
                    text,
                    judgment,
                    order,
                    int(timed_out),
                    client_ms,
                    self.clock(),
                ),
            )
            truth = target(item, step)
            feedback = {"target": truth, "correct": None if truth is None else text == truth}
            if step + 1 >= item.n_steps:
                db.execute("UPDATE assignments SET finished = ? WHERE pid = ? AND seq = ?",
                           (self.clock(), participant.pid, seq))  # fmt: skip
                if item.role == "catch":
                    self._judge_attention(db, participant.pid)
            return {"stored": True, "feedback": feedback, "state": self._state(db, participant.pid)}

    def _check_answer(
        self, item: Item, pid: int, seq: int, answer: Any, timed_out: bool
    ) -> tuple[str, float | None, str | None]:
        if "true_token" in item.payload:  # a which-one round: a percentage for the token shown first
            if timed_out and answer is None:
                return "", None, shown_order(pid, seq)
            if not _is_int(answer) or answer not in JUDGMENT_PERCENTS:
                raise Refused(422, f"answer: expected one of {', '.join(map(str, JUDGMENT_PERCENTS))}")
            order = shown_order(pid, seq)
            first = answer / 100
            return str(answer), first if order == "true_first" else round(1 - first, 10), order
        guessing_a_token = "tokens" in item.payload  # a next-token game step (not one of its attention checks)
        text = clean_text(answer if answer is not None else "", "answer", keep_leading_space=guessing_a_token)
        if not text and not (self.study.allow_skip or timed_out):
            raise Refused(422, "answer: empty (type a word)")
        return text, None, None

    def _judge_attention(self, db: sqlite3.Connection, pid: int) -> None:
        failures = 0
        for row in db.execute("SELECT r.item_id, r.answer, r.judgment FROM responses r JOIN assignments a "
                              "USING (pid, seq) WHERE r.pid = ? AND a.role = 'catch'", (pid,)):  # fmt: skip
            failures += not passes_check(self.items[row["item_id"]], row["answer"], row["judgment"])
        if failures > self.study.attention_max_failures:
            reason = f"failed {failures} attention check(s), more than the {self.study.attention_max_failures} allowed"
            db.execute("UPDATE participants SET status = 'excluded', excluded_reason = ?, completed = ? "
                       "WHERE pid = ? AND status = 'active'", (reason, self.clock(), pid))  # fmt: skip


def _is_int(value: Any) -> bool:
    """An integer in JSON's sense: ``true`` and ``1.0`` are not."""
    return isinstance(value, int) and not isinstance(value, bool)


def shown_order(pid: int, seq: int) -> str:
    """Which of a which-one round's tokens is shown first: a fixed function of participant and slot, so a reload
    shows the same order and the stored judgment is read the way it was given."""
    digest = hashlib.sha256(f"{pid}:{seq}".encode()).digest()
    return "true_first" if digest[0] % 2 == 0 else "sampled_first"


def _participant(row: sqlite3.Row) -> Participant:
    return Participant(
        int(row["pid"]), str(row["external_id"]), str(row["session"]), str(row["csrf"]),
        row["consented"] is not None, str(row["status"]),
    )  # fmt: skip
