"""``harness data list|fetch|verify``: the registered data sets (``register_data_sets``), where they come from, and
their files under the data root, downloaded from the official sources and checked against pinned SHA-256s
(:mod:`harness.data.sets`); ``harness data inspect FILE``: a user's own data file summarised and a task file
written for it (:mod:`harness.data.inspection`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.cli.parsing import add_command
from harness.data import downloads
from harness.data.inspection import find_file, inspect_file
from harness.data.loaders import downloads_allowed, resolve_data_dir
from harness.data.sets import (
    DataSet,
    FetchError,
    check_files,
    fetch,
    offline_message,
    problems,
    status,
)
from harness.data.tables.file_rows import FORMATS
from harness.errors import HarnessError
from harness.files import atomic_write_text
from harness.registry.manager import get_registry


def add_data(sub: Any) -> None:
    p = add_command(
        sub,
        "data",
        "list, fetch and verify the built-in data sets (official sources, pinned SHA-256); inspect a file of yours",
        (
            "harness data list",
            "harness data fetch all --data-dir data",
            "harness data verify --data-dir ../shared/data",
            "harness data inspect ../shared/data/provo/provo_cloze_responses.csv --data-dir ../shared/data",
        ),
    )
    actions = p.add_subparsers(dest="action", required=True)
    listing = add_command(
        actions,
        "list",
        "each data set: its source, license, size, and whether it is present and verified under the data root",
        ("harness data list --data-dir ../shared/data", "harness data list --json"),
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of text")
    getting = add_command(
        actions,
        "fetch",
        "download data sets from their official sources into the data root, checked against pinned SHA-256s",
        (
            "harness data fetch all",
            "harness data fetch asset wmt14-multiref --data-dir data",
            "harness data fetch provo",
        ),
    )
    getting.add_argument("names", nargs="+", metavar="NAME", help="data set names (harness data list), or all")
    getting.add_argument("--force", action="store_true", help="replace files that differ from their pinned SHA-256")
    getting.add_argument(
        "--mirror",
        metavar="URL",
        help=f"fetch https://HOST/PATH from URL/HOST/PATH instead (same as {downloads.MIRROR_ENV}=URL)",
    )
    checking = add_command(
        actions,
        "verify",
        "check the files present under the data root against the pinned SHA-256s (exit status 2 on a problem)",
        ("harness data verify", "harness data verify asset --data-dir ../shared/data"),
    )
    checking.add_argument("names", nargs="*", metavar="NAME", help="data set names (default: all)")
    inspecting = add_command(
        actions,
        "inspect",
        "read one data file of yours and write a task file for it: its columns, a guess of the shape of its human "
        "data, the blanks to fill (docs/your-data.md)",
        (
            "harness data inspect ../shared/data/provo/provo_cloze_responses.csv --data-dir ../shared/data",
            "harness data inspect provo/provo_cloze_responses.csv --data-dir ../shared/data -o /tmp/provo.yaml --force",
        ),
    )
    inspecting.add_argument("file", metavar="FILE", help="a CSV, TSV, JSON, JSON Lines or Parquet file")
    inspecting.add_argument(
        "--format", choices=FORMATS, default="auto", help="the file's format (default: by extension)"
    )
    inspecting.add_argument("--json-field", metavar="KEY", help="a JSON file whose records are the list under KEY")
    inspecting.add_argument(
        "--json-key", metavar="COLUMN", help="a JSON object of records keyed by id: each key goes in COLUMN"
    )
    inspecting.add_argument("-o", "--output", metavar="TASK.yaml", help="write the task file here (default: stdout)")
    inspecting.add_argument("--force", action="store_true", help="replace the --output file if it exists")
    for parser in (listing, getting, checking, inspecting):
        parser.add_argument(
            "--data-dir", help="the data root (default: HARNESS_DATA_DIR, else the user cache directory)"
        )
        parser.set_defaults(handler=cmd_data)


def cmd_data(args: argparse.Namespace) -> int:
    root, how = resolve_data_dir(args.data_dir)
    if args.action == "list":
        return _list(root, how, args.json)
    if args.action == "inspect":
        return _inspect(args, root)
    if args.action == "fetch":
        with _mirror(args.mirror):
            return _fetch(_chosen(args.names), root, args.force, explicit="all" not in args.names)
    return _verify(_chosen(args.names or ["all"]), root, explicit=bool(args.names) and "all" not in args.names)


def _inspect(args: argparse.Namespace, root: Path) -> int:
    """The inspection as a task file on stdout (its report as comments), or written to ``--output`` with the report
    on stdout."""
    path, files = find_file(args.file, root)
    found = inspect_file(path, files, root, args.format, args.json_field, args.json_key)
    if args.output is None:
        sys.stdout.write(found.text(root))
        return 0
    out = Path(args.output)
    if out.exists() and not args.force:
        raise HarnessError(f"--output {out}: the file exists (your filled blanks?); --force replaces it")
    atomic_write_text(out, found.text(root))
    print("\n".join([*found.report, "", *found.next_steps(str(out), root)]))
    return 0


def _chosen(names: list[str]) -> list[DataSet]:
    """The data sets named (``all``: every registered one), in registry order, each once."""
    table = get_registry().data_sets
    if "all" in names:
        return [entry.obj for entry in table.values()]
    unknown = [n for n in names if n not in table]
    if unknown:
        raise HarnessError(f"unknown data set '{unknown[0]}' (known: {', '.join(table)}, or all)")
    return [table[n].obj for n in dict.fromkeys(names)]


@contextlib.contextmanager
def _mirror(url: str | None) -> Iterator[None]:
    """``--mirror URL`` for the duration of the command: the environment variable every download reads (the
    loaders' own downloads, which a data set's fetcher may call, included)."""
    if url is None:
        downloads.mirror_base()  # a malformed HARNESS_DATA_MIRROR is an error before anything is fetched
        yield
        return
    downloads.mirror_base(url)
    old = os.environ.get(downloads.MIRROR_ENV)
    os.environ[downloads.MIRROR_ENV] = url
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(downloads.MIRROR_ENV, None)
        else:
            os.environ[downloads.MIRROR_ENV] = old


def _size(n: int | None) -> str:
    if n is None:
        return "size unknown"
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} kB"


def _list(root: Path, how: str, as_json: bool) -> int:
    rows: list[dict[str, Any]] = []
    for entry in get_registry().data_sets.values():
        ds: DataSet = entry.obj
        checks = check_files(ds, root)
        rows.append(
            {
                "name": ds.name,
                "status": status(ds, checks, root),
                "title": ds.title,
                "source": ds.source,
                "license": ds.license,
                "files": len(ds.files),
                "bytes": ds.size,
                "sha256_pinned": ds.pinned,
                "in_fetch_all": ds.pinned,
                "folder": str(ds.folder(root)),
                "note": ds.note,
                "plugin": entry.plugin,
            }
        )
    if as_json:
        print(json.dumps({"data_root": str(root), "chosen_by": how, "data_sets": rows}, indent=2))
        return 0
    print(f"data root: {root} ({how})")
    for row in rows:
        pins = "SHA-256 pinned" if row["sha256_pinned"] else "no SHA-256 pinned"
        files = f"{row['files']} file" + ("s" if row["files"] != 1 else "")
        print(f"{row['name']:<22} {row['status']:<20} {_size(row['bytes']):<13} {files}, {pins}")
        print(f"    {row['title']}")
        print(f"    source: {row['source']}")
        print(f"    license: {row['license']}")
        if row["note"]:
            print(f"    note: {row['note']}")
    return 0


def _fetch(chosen: list[DataSet], root: Path, force: bool, *, explicit: bool) -> int:
    """Fetch each data set (without a pinned checksum only when named); one line each, failures on stderr."""
    if not downloads_allowed():
        raise HarnessError(offline_message())
    failed = 0
    for ds in chosen:
        if not ds.pinned and not explicit:
            print(
                f"{ds.name}: not fetched by 'all': no SHA-256 is pinned for it; 'harness data fetch {ds.name}' "
                "downloads it unverified"
            )
            continue
        try:
            print(fetch(ds, root, force=force).line())
        except OSError as exc:  # a folder that cannot be made or written: every other data set would fail the same way
            raise HarnessError(unwritable(exc, root)) from None
        except FetchError as exc:
            if exc.unreachable:  # every other download would fail the same way: one line, not one per data set
                raise HarnessError(f"{exc} (no network?)") from None
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
    return 2 if failed else 0


def unwritable(exc: OSError, root: Path) -> str:
    """A folder the download cannot write into, in one line naming it (and the data root it is under)."""
    folder = Path(exc.filename) if exc.filename else root
    why = exc.strerror or type(exc).__name__
    under = "" if folder == root else f" (under the data root {root})"
    return (
        f"cannot write into {folder}{under}: {why}; nothing was fetched (choose a data root you can write: "
        "--data-dir DIR or HARNESS_DATA_DIR=DIR)"
    )


def _verify(chosen: list[DataSet], root: Path, *, explicit: bool) -> int:
    """One line per file problem (stderr) and one per data set (stdout); exit status 2 when something fails."""
    failed = 0
    for ds in chosen:
        checks = check_files(ds, root)
        found = problems(checks, root)
        state = status(ds, checks, root)
        for line in found:
            print(f"error: {ds.name}: {line}", file=sys.stderr)
        failed += len(found)
        if state == "derived copy only":
            present = ", ".join(d for d in ds.derived if (root / d).is_file())
            print(f"{ds.name}: NOT verified: only a derived copy is present ({present}), and it has no pinned checksum")
        elif state == "absent":
            if explicit:
                print(
                    f"error: {ds.name}: not present under {root} ('harness data fetch {ds.name}' gets it)",
                    file=sys.stderr,
                )
                failed += 1
            else:
                print(f"{ds.name}: absent, nothing to verify")
        elif not found:
            unpinned = [c for c in checks if c.state == "unpinned"]
            if unpinned:
                sums = ", ".join(f"{Path(c.file.path).name} SHA-256 {c.detail}" for c in unpinned)
                print(f"{ds.name}: present but NOT verified: no SHA-256 is pinned ({sums})")
            else:
                print(f"{ds.name}: verified ({len(checks)} files)")
    return 2 if failed else 0
