"""How fast answers arrive: the admin page's answers per minute, so an organiser sees a study stall.

Why counted from ``responses.received`` (the server's clock when the answer was committed) and not from the page's
times: it is the one time a participant cannot forge, and it is what "the server is still getting answers" means.
Every stored answer counts (practice, attention checks, excluded participants): a stall is a stall whoever it is.
"""

from __future__ import annotations

import sqlite3
from typing import Any

SECONDS = 60


def answers_per_minute(db: sqlite3.Connection, now: float, minutes: int = 60) -> dict[str, Any]:
    """Answers received per minute up to ``now`` (a unix time).

    ``per_minute`` holds ``minutes`` counts, oldest first; its last entry counts the answers received in
    ``(now - 60 s, now]``, the one before it ``(now - 120 s, now - 60 s]``, and so on. ``last_minute`` and
    ``last_10_minutes`` count ``(now - 60 s, now]`` and ``(now - 600 s, now]`` whatever ``minutes`` is. Answers
    stamped after ``now`` (a clock set back) are not counted."""
    if minutes < 1:
        raise ValueError(f"minutes: expected a positive number, got {minutes}")
    per_minute = [0] * minutes
    rows = db.execute(
        "SELECT CAST((? - received) / ? AS INTEGER) AS ago, COUNT(*) FROM responses "
        "WHERE received > ? AND received <= ? GROUP BY ago",
        (now, SECONDS, now - minutes * SECONDS, now),
    )
    for ago, count in rows:
        ago = min(max(int(ago), 0), minutes - 1)  # the window's edge, where float division could round up
        per_minute[minutes - 1 - ago] += int(count)
    return {
        "last_minute": _count_since(db, now, 1),
        "last_10_minutes": _count_since(db, now, 10),
        "per_minute": per_minute,
    }


def _count_since(db: sqlite3.Connection, now: float, minutes: int) -> int:
    row = db.execute(
        "SELECT COUNT(*) FROM responses WHERE received > ? AND received <= ?", (now - minutes * SECONDS, now)
    ).fetchone()
    return int(row[0])
