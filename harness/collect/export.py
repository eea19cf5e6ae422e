"""``harness collect export``: a study's responses written as exactly the files the harness reads, with a manifest.

Why the export, not the database, is what analyses read: the database holds everything (practice answers, attention
checks, people later excluded, answers left empty), and every analysis must drop the same things. The export applies
those rules once (``harness.collect.selection``): only answers to main items, by participants not excluded, that are
real answers (an empty or timed-out answer is counted as missing, never as a response). Each kind writes the format
its analysis already reads (``harness.collect.export_cloze``, ``harness.collect.export_games``); ``manifest.json``
says what was exported from which database and study version, what was left out and why, and each file's SHA-256.

Participant ids can be replaced by pseudonyms (``hash_ids``): an HMAC-SHA256 of the platform id under a secret salt
made once and kept in the study database (meta key ``export_salt``), so one person has the same pseudonym in
every export of the study, and the pseudonym cannot be traced back to the platform id without the database.

Why an export never replaces a file it did not write: ``--out .`` in the study's folder would otherwise replace the
study file with the exported task file of the same name, and an export into the folder of the texts file
``responses.csv`` would replace the texts. So ``--out`` must be a new folder, an empty one, or exactly an earlier
export (its ``manifest.json``, the files that manifest lists and the folders they are in); anything else is refused
in one line before anything is written (the salt for ``hash_ids`` included). The earlier export's files are then
replaced, and those it listed that this export does not write are removed: they were the harness's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from harness import __version__
from harness.collect.export_cloze import write_cloze
from harness.collect.export_games import write_next_token, write_which_one
from harness.collect.flow import StudyFlow
from harness.collect.items import Item
from harness.collect.selection import Answer, select_answers
from harness.collect.status import progress
from harness.collect.store import StudyStore
from harness.data.sets import sha256_file
from harness.errors import HarnessError, shorten_repr
from harness.files import ensure_output_dir, read_bytes, write_json

MANIFEST = "manifest.json"
SALT_KEY = "export_salt"
#: Hex digits of the HMAC kept as a pseudonym (64 bits: no collision among any realistic number of people).
PSEUDONYM_HEX = 16
#: How many of the files an export did not write its refusal names.
FOREIGN_SHOWN = 3
MAX_MANIFEST_BYTES = 64 * 1024 * 1024


#: A kind's writer: (flow, the main items in study order, the exported answers in that order (by item, step, then as
#: received), the output folder) -> the files it wrote (relative to the folder) and what it adds to the manifest.
Writer = Callable[[StudyFlow, list[Item], list[Answer], Path], tuple[list[str], dict[str, Any]]]


def export_study(flow: StudyFlow, out_dir: Path, hash_ids: bool) -> dict[str, Any]:
    """Write the study's export into ``out_dir`` and return its manifest (also written as ``manifest.json``).

    The responses, the participants and the coverage are read in one snapshot of the database, so an export taken
    while the server runs is consistent. ``out_dir`` must be new, empty or an earlier export (``earlier_export``)."""
    earlier = earlier_export(out_dir)
    ensure_output_dir(out_dir, "--out")
    name = pseudonymiser(flow.store) if hash_ids else str
    db = flow.store.read()
    db.execute("BEGIN")
    try:
        rows = flow.store.responses()
        report = progress(flow)
    finally:
        db.execute("COMMIT")
    main = flow.store.items("main")
    answers, counts = select_answers(flow.study.kind, flow.items, rows, name)
    order = {item.item_id: i for i, item in enumerate(main)}
    answers.sort(key=lambda a: (order[a.item.item_id], a.step, a.rid))  # study order, each step in order received
    files, extra = _writer(flow.study.kind)(flow, main, answers, out_dir)
    _remove_stale(out_dir, [rel for rel in earlier if rel not in files])
    manifest = _manifest(flow, report, answers, counts, name, hash_ids, out_dir, files)
    manifest.update(extra)
    write_json(out_dir / MANIFEST, manifest)
    return manifest


def earlier_export(out_dir: Path) -> list[str]:
    """The files the earlier export in ``out_dir`` listed (none for a folder that is new or empty, or not a folder:
    ``ensure_output_dir`` says so). A folder holding anything else (a file or folder that is neither its
    ``manifest.json``, nor a file it lists, nor a folder they are in) is refused in one line naming the first few."""
    if not out_dir.is_dir():
        return []
    listed, why_not = _listed_files(out_dir / MANIFEST)
    ours = {MANIFEST, *listed} if why_not is None else set()
    folders = {str(parent) for rel in ours for parent in PurePosixPath(rel).parents if str(parent) != "."}
    foreign: list[str] = []
    try:
        _find_foreign(out_dir, "", ours, folders, foreign)
    except OSError as exc:
        raise HarnessError(f"--out {out_dir}: cannot read the folder ({exc.strerror or type(exc).__name__})") from None
    if foreign:
        shown = ", ".join(foreign[:FOREIGN_SHOWN]) + (", ..." if len(foreign) > FOREIGN_SHOWN else "")
        because = f" (its {MANIFEST} is not an export's: {why_not})" if why_not and MANIFEST in foreign else ""
        raise HarnessError(
            f"--out {out_dir}: the folder holds files this export did not write ({shown}): give a new or empty folder, "
            f"or the folder of an earlier export{because}"
        )
    return listed


def _listed_files(path: Path) -> tuple[list[str], str | None]:
    """The files an export's manifest lists (relative, normalised), or why ``path`` is not an export's manifest."""
    if not path.is_file():
        return [], None if not path.exists() and not path.is_symlink() else "not a file"
    try:
        manifest = json.loads(read_bytes(path, "manifest", MAX_MANIFEST_BYTES))
    except (HarnessError, ValueError, RecursionError):
        return [], "not JSON"
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        return [], "no 'files' mapping"
    listed = []
    for rel in files:
        parts = PurePosixPath(rel).parts
        if not rel or not parts or PurePosixPath(rel).is_absolute() or PureWindowsPath(rel).anchor or ".." in parts:
            return [], f"it lists {shorten_repr(rel)}, outside the folder"
        listed.append("/".join(parts))
    return listed, None


def _find_foreign(folder: Path, prefix: str, ours: set[str], folders: set[str], found: list[str]) -> None:
    """Add to ``found`` what under ``folder`` is not ours, in name order, stopping after the few a refusal shows.
    A link is never ours (an export writes plain files and folders)."""
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if len(found) > FOREIGN_SHOWN:
            return
        rel = prefix + entry.name
        if entry.is_symlink() or not (entry.is_dir() or entry.is_file()):
            found.append(rel)
        elif entry.is_dir():
            if rel in folders and rel not in ours:
                _find_foreign(entry, rel + "/", ours, folders, found)
            else:
                found.append(rel + "/")
        elif rel not in ours:
            found.append(rel)


def _remove_stale(out_dir: Path, stale: list[str]) -> None:
    """Remove the earlier export's files this one did not write, and the folders they leave empty."""
    for rel in stale:
        if rel == MANIFEST:
            continue
        path = out_dir / rel
        path.unlink(missing_ok=True)
        for parent in PurePosixPath(rel).parents:
            if str(parent) == ".":
                break
            try:
                (out_dir / parent).rmdir()
            except OSError:  # not empty: it holds this export's files
                break


def _writer(kind: str) -> Writer:
    if kind in ("passage_cloze", "sentence_completion"):
        return write_cloze
    return write_next_token if kind == "next_token_game" else write_which_one


def pseudonymiser(store: StudyStore) -> Callable[[str], str]:
    """The study's pseudonym function: ``HMAC-SHA256(salt, platform id)``, its first :data:`PSEUDONYM_HEX` hex
    digits. The salt (32 random bytes, :mod:`secrets`) is made on the first export and kept in the database."""
    with store.write() as db:
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (SALT_KEY, secrets.token_hex(32)))
    salt = store.meta(SALT_KEY)
    if salt is None:  # pragma: no cover - the row was just written
        raise HarnessError(f"{store.path}: cannot keep the export salt in the study database")
    key = bytes.fromhex(salt)

    def name(external_id: str) -> str:
        return hmac.new(key, external_id.encode("utf-8"), hashlib.sha256).hexdigest()[:PSEUDONYM_HEX]

    return name


def _manifest(
    flow: StudyFlow,
    report: dict[str, Any],
    answers: list[Answer],
    left_out: dict[str, int],
    name: Callable[[str], str],
    hash_ids: bool,
    out_dir: Path,
    files: list[str],
) -> dict[str, Any]:
    per_item: dict[str, dict[str, Any]] = {}
    for a in answers:
        entry = per_item.setdefault(a.item.item_id, {"responses": 0, "people": set()})
        entry["responses"] += 1
        entry["people"].add(a.participant)
    coverage = [
        {
            **item,
            "participants_exported": len(per_item.get(item["item_id"], {}).get("people", ())),
            "responses_exported": per_item.get(item["item_id"], {}).get("responses", 0),
        }
        for item in report["items"]
    ]
    return {
        "study": flow.study.name,
        "kind": flow.study.kind,
        "digest": flow.study.digest,
        # Safe edits the study was continued under while it ran (harness.collect.edits): which fields, when.
        "study_edits": flow.store.edits(),
        "study_file": str(flow.study.path.resolve()),
        "database": str(flow.store.path.resolve()),
        "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "harness_version": __version__,
        "participant_ids": (
            f"pseudonyms: HMAC-SHA256 of the platform id under the database's secret '{SALT_KEY}', first "
            f"{PSEUDONYM_HEX} hex digits"
            if hash_ids
            else "the platform ids as given"
        ),
        "counts": {
            "participants": report["participants"],
            "participants_exported": len({a.participant for a in answers}),
            "responses_exported": len(answers),
            "missing": {"empty": left_out["empty"], "timed_out": left_out["timed_out"]},
            "not_exported": {
                "excluded_participants": left_out["excluded_participants"],
                "practice_and_catch": left_out["practice_and_catch"],
            },
            "items": report["n_items"],
            "items_at_target": report["items_at_target"],
        },
        "exclusions": [{"participant": name(e["participant"]), "reason": e["reason"]} for e in report["excluded"]],
        "coverage": coverage,
        "files": {
            rel: {"sha256": sha256_file(out_dir / rel), "bytes": (out_dir / rel).stat().st_size} for rel in files
        },
    }
