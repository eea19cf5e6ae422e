"""Where a study stands: who took part, who was excluded and why, and how far each item is from its target number
of people.

Why one function for both the admin page and ``harness collect status``: the researcher decides from these numbers
when to stop recruiting, so the page and the command must count the same way the flow assigns items. An item's
coverage is counted as the flow counts it (``harness.collect.flow``): assignments of participants who are not
excluded: ``finished`` when every step was answered, ``in_progress`` while its place is held (open, assigned less
than ``session_minutes`` ago, not released by the organiser), ``released`` when open but no longer holding a place.
People who opened the link but never consented (turned away, or gone) are counted apart from active ones.
"""

from __future__ import annotations

from typing import Any

from harness.collect.activity import answers_per_minute
from harness.collect.flow import HOLDING, StudyFlow

#: Participant statuses, in the order they are reported (``not_consented``: opened the link, never consented).
STATUSES = ("not_consented", "active", "complete", "excluded")


def progress(flow: StudyFlow) -> dict[str, Any]:
    """The study's progress, read in one snapshot of the database (JSON-ready; inside the caller's read
    transaction when one is open, so an export counts from the same snapshot it exports).

    Keys: ``study``, ``kind``, ``digest``, ``database``; ``participants`` (``total``, ``consented`` and one count
    per status); ``excluded`` (``participant``: the platform id as given, ``reason``); ``items`` (per main item, in
    the study's order: ``item_id``, ``target``, ``finished``, ``in_progress``, ``released`` (open but
    holding no place: past ``session_minutes`` or released by the organiser), ``steps``); ``responses``
    (``stored``: every stored answer, practice and checks included; ``main``: answers to main items by
    participants not excluded); ``activity`` (answers received per minute: ``last_minute``, ``last_10_minutes``,
    ``per_minute`` over the last hour, oldest first; ``harness.collect.activity``);
    ``items_at_target`` and ``n_items``; ``complete`` (every item at its target).
    """
    study = flow.study
    now = flow.clock()
    db = flow.store.read()
    own = not db.in_transaction  # one read snapshot (the server may be writing meanwhile), or the caller's
    if own:
        db.execute("BEGIN")
    try:
        people = [dict(r) for r in db.execute("SELECT pid, external_id, status, excluded_reason, consented FROM "
                                              "participants ORDER BY pid")]  # fmt: skip
        rows = db.execute(
            f"""
            SELECT i.item_id, i.n_steps, i.participants,
                SUM(a.finished IS NOT NULL) AS finished,
                SUM(a.pid IS NOT NULL AND {HOLDING}) AS in_progress,
                SUM(a.pid IS NOT NULL AND a.finished IS NULL AND NOT {HOLDING}) AS released
            FROM items i
            LEFT JOIN assignments a ON a.item_id = i.item_id AND a.role = 'main'
                AND a.pid IN (SELECT pid FROM participants WHERE status != 'excluded')
            WHERE i.role = 'main' GROUP BY i.item_id ORDER BY i.ord
            """,
            {"cutoff": flow.hold_cutoff()},
        ).fetchall()
        stored = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        activity = answers_per_minute(db, now)
        main = db.execute(
            "SELECT COUNT(*) FROM responses r JOIN assignments a USING (pid, seq) JOIN participants p USING (pid) "
            "WHERE a.role = 'main' AND p.status != 'excluded'"
        ).fetchone()[0]
    finally:
        if own:
            db.execute("COMMIT")
    by_status = {status: sum(_status(p) == status for p in people) for status in STATUSES}
    items: list[dict[str, Any]] = [
        {
            "item_id": str(r["item_id"]),
            "target": int(r["participants"] or study.participants_per_item),
            "finished": int(r["finished"] or 0),
            "in_progress": int(r["in_progress"] or 0),
            "released": int(r["released"] or 0),
            "steps": int(r["n_steps"]),
        }
        for r in rows
    ]
    at_target = sum(item["finished"] >= item["target"] for item in items)
    return {
        "study": study.name,
        "kind": study.kind,
        "digest": study.digest,
        "database": str(flow.store.path),
        "participants": {
            "total": len(people),
            "consented": sum(p["consented"] is not None for p in people),
            **by_status,
        },
        "excluded": [
            {"participant": str(p["external_id"]), "reason": str(p["excluded_reason"] or "")}
            for p in people
            if p["status"] == "excluded"
        ],
        "items": items,
        "responses": {"stored": int(stored), "main": int(main)},
        "activity": activity,
        "items_at_target": at_target,
        "n_items": len(items),
        "complete": bool(items) and at_target == len(items),
    }


def _status(person: dict[str, Any]) -> str:
    """A participant's reported status: ``not_consented`` for an active one who never consented."""
    active = person["status"] == "active"
    return "not_consented" if active and person["consented"] is None else str(person["status"])


def format_progress(report: dict[str, Any], max_items: int | None = None) -> str:
    """``harness collect status``'s table: the study, one line per item (the first ``max_items``), participants and
    exclusions."""
    people = report["participants"]
    lines = [
        f"study {report['study']} ({report['kind']}, version {report['digest']}), database {report['database']}",
        f"participants: {people['total']} ({people['consented']} consented; "
        + ", ".join(f"{people[s]} {s.replace('_', ' ')}" for s in STATUSES)
        + ")",
        f"responses stored: {report['responses']['stored']} ({report['responses']['main']} to main items by "
        "participants not excluded)",
        f"answers received: {report['activity']['last_minute']} in the last minute, "
        f"{report['activity']['last_10_minutes']} in the last 10 minutes",
        f"items at target: {report['items_at_target']} of {report['n_items']}"
        + (" (complete)" if report["complete"] else ""),
        "",
    ]
    items = report["items"] if max_items is None else report["items"][:max_items]
    width = max([len("item"), *(len(i["item_id"]) for i in items)])
    lines.append(f"{'item':<{width}}  target  finished  in progress  released  steps")
    lines.append(f"{'-' * width}  ------  --------  -----------  --------  -----")
    for i in items:
        mark = "  *" if i["finished"] >= i["target"] else ""
        lines.append(
            f"{i['item_id']:<{width}}  {i['target']:>6}  {i['finished']:>8}  {i['in_progress']:>11}  "
            f"{i['released']:>8}  {i['steps']:>5}{mark}"
        )
    if len(items) < len(report["items"]):
        lines.append(f"... {len(report['items']) - len(items)} more items (--json lists them all)")
    if report["excluded"]:
        lines += ["", "excluded participants:"]
        lines += [f"  {e['participant']}: {e['reason']}" for e in report["excluded"]]
    return "\n".join(lines)
