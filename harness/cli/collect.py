"""``harness collect serve|status|export|check``: a human study defined in YAML, served to participants, and exported
as the files the harness's tasks read (``harness.collect``, docs/collect.md).

Why ``check`` exists beside ``serve``: a study's mistakes (a missing consent text, a texts file with a duplicate id,
a game whose model cannot tokenise) should show before anyone is recruited, without creating a database.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

from harness.cli.parsing import add_command
from harness.errors import HarnessError

ADMIN_TOKEN_ENV = "HARNESS_COLLECT_ADMIN_TOKEN"
#: The shortest admin token accepted from a file or the environment (a generated one has 43 characters).
MIN_TOKEN_CHARS = 16
STATUS_ITEMS_SHOWN = 200


def add_collect(sub: Any) -> None:
    p = add_command(
        sub,
        "collect",
        "run a human study (cloze, sentence completion, the next-token games): serve it, follow it, export it",
        (
            "harness collect check study.yaml --data-dir ../shared/data",
            "harness collect serve study.yaml --port 8000",
            "harness collect status study.yaml",
            "harness collect export study.yaml --out exports/study --hash-ids",
            "harness collect exclude study.yaml 5f1a2b3c4d5e6f7a8b9c0d1e --reason 'pasted the same answer'",
            "harness collect release study.yaml 5f1a2b3c4d5e6f7a8b9c0d1e",
        ),
        description="run a human study defined in YAML (docs/collect.md): 'serve' it to participants' browsers "
        "(responses go to an SQLite database beside the study file), follow it with 'status', and 'export' the "
        "responses as the files the harness reads (the Provo norms layout and a task file, the next-token game's "
        "guesses, the which-one game's rounds for harness human-perplexity); 'exclude' a participant or 'release' "
        "the places one holds while it runs",
    )
    actions = p.add_subparsers(dest="action", required=True)
    serve = add_command(
        actions,
        "serve",
        "serve the study over HTTP until stopped (Ctrl-C or SIGTERM); a restart continues the same database",
        (
            "harness collect serve study.yaml",
            "harness collect serve study.yaml --host 0.0.0.0 --port 8080 --root-path /study",
            "harness collect serve study.yaml --db responses.sqlite --admin-token-file admin.token",
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="port to listen on; 0 picks a free one (default 8000)")
    serve.add_argument(
        "--admin-token-file",
        metavar="FILE",
        help=f"the admin page's token (default: ${ADMIN_TOKEN_ENV}, else one made once and kept in DB.admin-token)",
    )
    serve.add_argument("--root-path", default="", type=_root_path, help="URL prefix when behind a proxy (/study)")
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the study is reached under (the proxy's public name, e.g. studies.example.org); requests "
        "for any other Host are refused (default: the --host address, and localhost when it is a loopback one)",
    )
    serve.add_argument(
        "--joins-per-minute",
        type=_count,
        default=20,
        metavar="N",
        help="new participants accepted per client address per minute (default 20; 0: no limit)",
    )
    status = add_command(
        actions,
        "status",
        "how far the study is: participants by status, exclusions, and each item's coverage against its target",
        ("harness collect status study.yaml", "harness collect status study.yaml --json"),
    )
    status.add_argument("--json", action="store_true", help="print the report as JSON (every item)")
    export = add_command(
        actions,
        "export",
        "write the responses (excluded people, practice, checks and empty answers left out) and a manifest",
        (
            "harness collect export study.yaml --out exports/study",
            "harness collect export study.yaml --out exports/study --hash-ids",
        ),
    )
    export.add_argument("--out", required=True, metavar="DIR", help="the folder to write the export into")
    export.add_argument(
        "--hash-ids",
        action="store_true",
        help="replace participant ids by pseudonyms (HMAC-SHA256 under a secret salt kept in the database)",
    )
    exclude = add_command(
        actions,
        "exclude",
        "exclude participants now (server running or not): their answers are not exported, their places freed",
        ("harness collect exclude study.yaml 5f1a2b3c4d5e6f7a8b9c0d1e --reason 'same answer everywhere'",),
    )
    exclude.add_argument("--reason", help="why (kept in the database, listed by status and the export manifest)")
    release = add_command(
        actions,
        "release",
        "release the places participants hold now, so other people get those items (their answers are kept)",
        ("harness collect release study.yaml 5f1a2b3c4d5e6f7a8b9c0d1e 60c2d4e6f8a0b2c4d6e8f0a1",),
    )
    check = add_command(
        actions,
        "check",
        "check the study file and build its items (games: with their model) without serving; print the counts",
        ("harness collect check study.yaml", "harness collect check study.yaml --data-dir ../shared/data"),
    )
    for parser in (serve, status, export, exclude, release, check):
        parser.add_argument("study", metavar="STUDY.yaml", help="the study file")
        if parser in (serve, check):  # the two that make the items
            parser.add_argument("--data-dir", help="the data root, for a study whose texts come from a task")
        if parser in (exclude, release):
            parser.add_argument("participants", nargs="+", metavar="ID", help="platform ids, as in the study link")
        if parser is not check:
            parser.add_argument("--db", metavar="PATH", help="the study database (default: STUDY.sqlite beside it)")
        parser.set_defaults(handler=cmd_collect)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got '{text}'")
    return int(text)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got '{text}'")
    return int(text)


def _root_path(text: str) -> str:
    if text and (not text.startswith("/") or any(c in text for c in " ?#\\")):
        raise argparse.ArgumentTypeError(f"expected a URL path such as /study, got '{text}'")
    return text.rstrip("/")


def cmd_collect(args: argparse.Namespace) -> int:
    study = Path(args.study)
    db = Path(args.db) if getattr(args, "db", None) else None
    if args.action == "serve":
        return _serve(args, study, db)
    if args.action == "check":
        return _check(study, args.data_dir)
    from harness.collect.prepare import open_existing

    flow, warning = open_existing(study, db)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    if args.action in ("exclude", "release"):
        return _organise(flow, args)
    if args.action == "status":
        from harness.collect.status import format_progress, progress

        report = progress(flow)
        if args.json:
            print(json.dumps(report, indent=2, ensure_ascii=False))
        else:
            print(format_progress(report, STATUS_ITEMS_SHOWN))
        return 0
    from harness.collect.export import export_study

    out = Path(args.out)
    manifest = export_study(flow, out, args.hash_ids)
    counts = manifest["counts"]
    missing = counts["missing"]
    left = counts["not_exported"]
    print(
        f"exported {counts['responses_exported']} responses of {counts['participants_exported']} participants "
        f"({manifest['kind']}) to {out}; missing answers: {missing['empty']} empty, {missing['timed_out']} timed out; "
        f"not exported: {left['excluded_participants']} of excluded participants, {left['practice_and_catch']} "
        f"practice and attention checks; items at target: {counts['items_at_target']} of {counts['items']}"
    )
    print("files: " + ", ".join(manifest["files"]) + ", manifest.json")
    for command in manifest.get("commands", []):
        print(f"  {command}")
    return 0


def _organise(flow: Any, args: argparse.Namespace) -> int:
    """``exclude`` / ``release``: one line per participant; an unknown id is an error after the others are done."""
    from harness.collect.organiser import exclude, release

    failed = []
    for external_id in args.participants:
        try:
            outcome = (
                exclude(flow, external_id, args.reason) if args.action == "exclude" else release(flow, external_id)
            )
        except HarnessError as exc:
            failed.append(str(exc))
            continue
        print(outcome.message)
    if failed:
        raise HarnessError("; ".join(failed))
    return 0


def _serve(args: argparse.Namespace, study: Path, db: Path | None) -> int:
    from harness.collect.prepare import default_db, open_study
    from harness.collect.web import require_extra, serve

    require_extra()  # before the items are made (a game loads its model for them)
    db = db or default_db(study)
    flow = open_study(study, db, args.data_dir)
    token, where = admin_token(args.admin_token_file, db)
    print(f"harness collect: database {db}; admin token {where} (open /admin?token=TOKEN)", flush=True)
    serve(
        flow, host=args.host, port=args.port, admin_token=token, root_path=args.root_path,
        allowed_hosts=tuple(args.allowed_host), joins_per_minute=args.joins_per_minute,
    )  # fmt: skip
    return 0


def admin_token(token_file: str | None, db: Path) -> tuple[str, str]:
    """The admin token and where it came from: ``--admin-token-file``, else ``$HARNESS_COLLECT_ADMIN_TOKEN``, else
    ``DB.admin-token`` (made once with :mod:`secrets`, mode 600, and reused on every restart so the admin's link
    keeps working). The token itself is never printed."""
    if token_file:
        return _read_token(Path(token_file)), f"from {token_file}"
    given = os.environ.get(ADMIN_TOKEN_ENV)
    if given is not None:
        if len(given.strip()) < MIN_TOKEN_CHARS:
            raise HarnessError(f"${ADMIN_TOKEN_ENV}: the admin token needs at least {MIN_TOKEN_CHARS} characters")
        return given.strip(), f"from ${ADMIN_TOKEN_ENV}"
    path = Path(f"{db}.admin-token")
    if not path.exists():
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # made meanwhile by another start: read it
            return _read_token(path), f"in {path}"
        except OSError as exc:
            raise HarnessError(f"{path}: cannot write the admin token ({exc.strerror or exc})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
        return _read_token(path), f"in {path} (new, mode 600)"
    return _read_token(path), f"in {path}"


def _read_token(path: Path) -> str:
    try:
        mode = path.stat().st_mode
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the admin token ({exc})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise HarnessError(f"{path}: the admin token file is readable by others (chmod 600 {path})")
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise HarnessError(f"{path}: the admin token needs at least {MIN_TOKEN_CHARS} characters and no spaces")
    return token


def _check(study_path: Path, data_dir: str | None) -> int:
    from harness.collect.prepare import make_items
    from harness.collect.study import load_study

    study = load_study(study_path)
    texts, items = make_items(study, data_dir)
    main = [i for i in items if i.role == "main"]
    targets = [int(i.payload.get("participants") or study.participants_per_item) for i in main]
    slots = sum(targets)
    answers = sum(t * i.n_steps for t, i in zip(targets, main, strict=True))
    per_person = min(study.items_per_participant, len(main))
    print(
        f"ok: {study_path} (study {study.name}, {study.kind}, version {study.digest}): {len(texts)} texts, "
        f"{len(main)} items ({sum(i.n_steps for i in main)} steps), "
        f"{sum(i.role == 'practice' for i in items)} practice, {sum(i.role == 'catch' for i in items)} attention "
        f"checks; {slots} item assignments to fill, {answers} answers in all; at {per_person} items per person, "
        f"at least {math.ceil(slots / per_person) if per_person else 0} participants"
    )
    return 0
