"""What the organiser can do to a running study from the command line: exclude a participant, or release the places
a participant holds (``harness collect exclude|release STUDY ID``).

Why on the database, not through the server: the server may be running (or not), and both work on the same SQLite
file (WAL, one write transaction each), so the change takes effect at the participant's next request and the next
assignment. Nothing is deleted: an excluded participant's answers stay in the database (the export leaves them
out and counts them), and a released place's answers so far stay too.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from harness.collect.flow import ORGANISER_EXCLUSION, StudyFlow
from harness.errors import HarnessError, shorten_repr


@dataclass(frozen=True)
class Outcome:
    """What one action changed, for the command's one line per participant."""

    participant: str
    changed: bool
    places_released: int
    answers_kept: int
    message: str


def exclude(flow: StudyFlow, external_id: str, reason: str | None = None) -> Outcome:
    """Exclude the participant: their answers are no longer exported, the places they hold count no more, and their
    page shows the excluded end page (with ``completion.excluded_code``, if the study gives one)."""
    why = f"{ORGANISER_EXCLUSION}: {reason}" if reason else ORGANISER_EXCLUSION
    with flow.store.write() as db:
        pid, status = _find(db, flow, external_id)
        held = _open_main(db, pid)
        answers = int(db.execute("SELECT COUNT(*) FROM responses WHERE pid = ?", (pid,)).fetchone()[0])
        if status == "excluded":
            return Outcome(external_id, False, 0, answers, f"{external_id}: already excluded")
        db.execute(
            "UPDATE participants SET status = 'excluded', excluded_reason = ?, completed = ? WHERE pid = ?",
            (why, flow.clock(), pid),
        )
    return Outcome(
        external_id, True, held, answers,
        f"{external_id}: excluded ({status} before; {held} place(s) freed; {answers} answer(s) kept in the database, "
        "not exported)",
    )  # fmt: skip


def release(flow: StudyFlow, external_id: str) -> Outcome:
    """Release the places (main items not finished) the participant holds, so others get them now: the participant
    keeps what they answered, does not continue a released item, and gets another item if one is free."""
    with flow.store.write() as db:
        pid, status = _find(db, flow, external_id)
        held = _open_main(db, pid)
        db.execute(
            "UPDATE assignments SET released = ? WHERE pid = ? AND role = 'main' AND finished IS NULL "
            "AND released IS NULL",
            (flow.clock(), pid),
        )
        answers = int(db.execute(
            "SELECT COUNT(*) FROM responses r JOIN assignments a USING (pid, seq) WHERE r.pid = ? AND a.role = 'main' "
            "AND a.released IS NOT NULL AND a.finished IS NULL", (pid,)).fetchone()[0])  # fmt: skip
    if not held:
        return Outcome(external_id, False, 0, 0, f"{external_id}: holds no place ({status})")
    return Outcome(
        external_id, True, held, answers,
        f"{external_id}: {held} place(s) released ({answers} answer(s) to them kept)",
    )  # fmt: skip


def _find(db: sqlite3.Connection, flow: StudyFlow, external_id: str) -> tuple[int, str]:
    row = db.execute("SELECT pid, status FROM participants WHERE external_id = ?", (external_id,)).fetchone()
    if row is None:
        raise HarnessError(
            f"{flow.store.path}: no participant {shorten_repr(external_id)} in study '{flow.study.name}' "
            "(ids are compared as given in the study link; 'harness collect status --json' lists them)"
        )
    return int(row["pid"]), str(row["status"])


def _open_main(db: sqlite3.Connection, pid: int) -> int:
    """The places the participant holds or held: main items assigned, not finished, not released."""
    return int(db.execute(
        "SELECT COUNT(*) FROM assignments WHERE pid = ? AND role = 'main' AND finished IS NULL AND released IS NULL",
        (pid,),
    ).fetchone()[0])  # fmt: skip
