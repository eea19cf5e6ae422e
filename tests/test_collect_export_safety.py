"""``harness collect export`` never overwrites a file it did not write, its task file's comment names the file as
written, and a study's texts of any length are read whole (or refused in one line) in every accepted format.

Why every export scenario checks the database and the organiser's files afterwards: a refused export must leave
everything as it was (the study file, the texts, no manifest, no export salt), and an accepted one must export
exactly the answers stored, each once, however often it is repeated into the same folder."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.collect.export import export_study
from harness.collect.flow import StudyFlow
from harness.collect.prepare import make_items, open_study
from harness.collect.study import load_study
from harness.errors import HarnessError
from tests.conftest import run_main

STUDY = (
    "study: My-Cloze\nkind: passage_cloze\nconsent: I agree.\ninstructions: Go.\ntexts: {file: texts.csv}\n"
    "participants_per_item: 3\nitems_per_participant: 1\n"
    "attention_checks: {every: 1, max_failures: 0, items: [{text: 'Type apple:', answer: apple}]}\n"
)
TEXTS = "id,text\ns1,Once upon a time\ns2,She sells sea shells\n"
REFUSAL = "the folder holds files this export did not write"
Given = list[tuple[str, str]]  # (participant, answer) in the order given, attention checks included


def study_in_folder(tmp_path: Path) -> tuple[StudyFlow, Path]:
    """The organiser's folder: the study file and its texts (the database kept elsewhere)."""
    folder = tmp_path / "my-study"
    folder.mkdir()
    (folder / "texts.csv").write_text(TEXTS, encoding="utf-8")
    path = folder / "My-Cloze.yaml"
    path.write_text(STUDY, encoding="utf-8")
    (tmp_path / "db").mkdir()
    return open_study(path, tmp_path / "db" / "My-Cloze.sqlite"), folder


def take_part(flow: StudyFlow, external_id: str, given: Given) -> int:
    """Answer every step (a distinct word each, attention checks right); record each answer; return the number of
    main answers."""
    person = flow.join(external_id)
    flow.consent(person)
    state = flow.state(person)
    main = 0
    while state["phase"] == "item":
        answer = "apple" if state["role"] == "catch" else f"{external_id}-w{state['step']}"
        main += state["role"] == "main"
        given.append((external_id, answer))
        state = flow.answer(person, state["seq"], state["step"], answer, 100, False)["state"]
    return main


def answered(flow: StudyFlow, people: list[str], given: Given) -> int:
    return sum(take_part(flow, p, given) for p in people)


def check_database(flow: StudyFlow, given: Given) -> None:
    """No answer lost, none stored twice: the responses table is exactly the answers given, in order."""
    with sqlite3.connect(flow.store.path) as db:
        rows = db.execute(
            "SELECT p.external_id, r.answer FROM responses r JOIN participants p USING (pid) ORDER BY r.rid"
        ).fetchall()
    assert [tuple(r) for r in rows] == given


def check_export(out: Path, manifest: dict[str, Any], n_main: int) -> None:
    assert manifest["counts"]["responses_exported"] == n_main
    with (out / "responses.csv").open(encoding="utf-8", newline="") as f:
        assert len(list(csv.DictReader(f))) == n_main
    assert json.loads((out / "manifest.json").read_text()) == manifest


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def salt(flow: StudyFlow) -> str | None:
    return flow.store.meta("export_salt")


# ------------------------------------------------------------------------------------------------ refused exports


@pytest.mark.parametrize("hash_ids", [False, True])
def test_an_export_into_the_study_folder_is_refused_and_changes_nothing(tmp_path: Path, hash_ids: bool) -> None:
    flow, folder = study_in_folder(tmp_path)
    given: Given = []
    n_main = answered(flow, ["p1", "p2"], given)
    before = snapshot(folder)
    with pytest.raises(HarnessError) as caught:
        export_study(flow, folder, hash_ids=hash_ids)
    assert str(caught.value) == (
        f"--out {folder}: {REFUSAL} (My-Cloze.yaml, texts.csv): give a new or empty folder, or the folder of an "
        "earlier export"
    )
    assert snapshot(folder) == before and not (folder / "manifest.json").exists()
    assert salt(flow) is None  # --hash-ids made no salt for an export that never happened
    check_database(flow, given)
    manifest = export_study(flow, tmp_path / "export", hash_ids=hash_ids)  # the same study exports elsewhere
    check_export(tmp_path / "export", manifest, n_main)
    assert (salt(flow) is not None) == hash_ids


def test_an_export_into_a_folder_holding_the_organisers_responses_csv_is_refused(tmp_path: Path) -> None:
    flow, _ = study_in_folder(tmp_path)
    given: Given = []
    answered(flow, ["p1"], given)
    mine = tmp_path / "analysis"
    mine.mkdir()
    (mine / "responses.csv").write_text("participant,answer\nme,my data\n", encoding="utf-8")
    before = snapshot(mine)
    with pytest.raises(HarnessError, match=re.escape(f"--out {mine}: {REFUSAL} (responses.csv): give a new")):
        export_study(flow, mine, hash_ids=True)
    assert snapshot(mine) == before and salt(flow) is None
    check_database(flow, given)


def test_an_earlier_export_plus_one_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    flow, _ = study_in_folder(tmp_path)
    given: Given = []
    answered(flow, ["p1", "p2"], given)
    out = tmp_path / "export"
    export_study(flow, out, hash_ids=False)
    (out / "provo" / "notes.txt").write_text("the organiser's notes", encoding="utf-8")
    before = snapshot(out)
    answered(flow, ["p3"], given)
    with pytest.raises(HarnessError, match=re.escape(f"--out {out}: {REFUSAL} (provo/notes.txt): give a new")):
        export_study(flow, out, hash_ids=False)
    assert snapshot(out) == before
    (out / "provo" / "notes.txt").unlink()
    (out / "empty-folder").mkdir()
    with pytest.raises(HarnessError, match=re.escape(f"({'empty-folder/'})")):
        export_study(flow, out, hash_ids=False)
    check_database(flow, given)


@pytest.mark.parametrize(
    ("manifest", "why"),
    [
        ('{"files": {"../x": {}}}', "it lists '../x', outside the folder"),
        ('{"files": {"a/../../x": {}}}', "it lists 'a/../../x', outside the folder"),
        ('{"files": {"/tmp/x": {}}}', "it lists '/tmp/x', outside the folder"),
        ('{"files": ["responses.csv"]}', "no 'files' mapping"),
        ("[1, 2]", "no 'files' mapping"),
        ("not json {", "not JSON"),
    ],
)
def test_a_folder_whose_manifest_is_not_an_exports_is_refused(tmp_path: Path, manifest: str, why: str) -> None:
    flow, _ = study_in_folder(tmp_path)
    given: Given = []
    answered(flow, ["p1"], given)
    (tmp_path / "x").write_text("outside", encoding="utf-8")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "manifest.json").write_text(manifest, encoding="utf-8")
    before, outside = snapshot(fake), (tmp_path / "x").read_bytes()
    with pytest.raises(HarnessError) as caught:
        export_study(flow, fake, hash_ids=True)
    assert str(caught.value) == (
        f"--out {fake}: {REFUSAL} (manifest.json): give a new or empty folder, or the folder of an earlier export "
        f"(its manifest.json is not an export's: {why})"
    )
    assert snapshot(fake) == before and (tmp_path / "x").read_bytes() == outside and salt(flow) is None
    check_database(flow, given)


def test_a_link_in_an_export_folder_is_never_taken_for_the_exports(tmp_path: Path) -> None:
    flow, folder = study_in_folder(tmp_path)
    answered(flow, ["p1"], [])
    out = tmp_path / "export"
    export_study(flow, out, hash_ids=False)
    (out / "responses.csv").unlink()
    (out / "responses.csv").symlink_to(folder / "texts.csv")  # a listed name, but not a file the export wrote
    with pytest.raises(HarnessError, match=re.escape(f"{REFUSAL} (responses.csv)")):
        export_study(flow, out, hash_ids=False)
    assert (folder / "texts.csv").read_text(encoding="utf-8") == TEXTS


# ------------------------------------------------------------------------------------------------ accepted exports


def test_exporting_twice_into_one_folder_replaces_the_export(tmp_path: Path) -> None:
    flow, folder = study_in_folder(tmp_path)
    organiser = snapshot(folder)
    given: Given = []
    n_main = answered(flow, ["p1", "p2"], given)
    out = tmp_path / "export"
    out.mkdir()  # an empty folder is fine
    first = export_study(flow, out, hash_ids=True)
    check_export(out, first, n_main)
    # A file the earlier export listed and this one does not write is removed, and the folder it leaves empty.
    (out / "old").mkdir()
    (out / "old" / "stale.csv").write_text("ours", encoding="utf-8")
    listed = json.loads((out / "manifest.json").read_text())
    listed["files"]["old/stale.csv"] = {"sha256": "0" * 64, "bytes": 4}
    (out / "manifest.json").write_text(json.dumps(listed), encoding="utf-8")
    n_main += answered(flow, ["p3", "p4"], given)
    second = export_study(flow, out, hash_ids=True)
    check_export(out, second, n_main)
    assert second["counts"]["responses_exported"] > first["counts"]["responses_exported"]
    assert second["files"] != first["files"] and set(second["files"]) == set(first["files"])
    assert not (out / "old").exists()
    assert sorted(snapshot(out)) == sorted([*second["files"], "manifest.json"])  # nothing else left behind
    third = export_study(flow, out, hash_ids=True)  # and again: same answers, same pseudonyms, same files
    assert third["files"] == second["files"]
    check_database(flow, given)
    assert snapshot(folder) == organiser


def test_the_task_files_comment_names_the_file_as_written(tmp_path: Path) -> None:
    flow, _ = study_in_folder(tmp_path)
    answered(flow, ["p1"], [])
    out = tmp_path / "export"
    manifest = export_study(flow, out, hash_ids=False)
    task = out / "My-Cloze.yaml"
    named = re.findall(r"--tasks EXPORT/(\S+)", task.read_text(encoding="utf-8"))
    assert named == ["My-Cloze.yaml"] and (out / named[0]).is_file() and named[0] in manifest["files"]
    assert "task: my-cloze\n" in task.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------------ the command


def test_the_export_command_refuses_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flow, folder = study_in_folder(tmp_path)
    given: Given = []
    answered(flow, ["p1", "p2"], given)
    before = snapshot(folder)
    monkeypatch.chdir(folder)
    db = str(flow.store.path)
    said = run_main("collect", "export", "My-Cloze.yaml", "--db", db, "--out", ".", "--hash-ids", check=False)
    assert said.returncode != 0 and said.stdout == ""
    assert said.stderr == (
        f"error: --out .: {REFUSAL} (My-Cloze.yaml, texts.csv): give a new or empty folder, or the folder of an "
        "earlier export\n"
    )
    assert snapshot(folder) == before and salt(flow) is None
    check_database(flow, given)
    run_main("collect", "export", "My-Cloze.yaml", "--db", db, "--out", "export")
    run_main("collect", "export", "My-Cloze.yaml", "--db", db, "--out", "export")  # again: replaced
    assert json.loads((folder / "export" / "manifest.json").read_text())["counts"]["responses_exported"] == 6


@pytest.mark.slow
def test_the_export_command_refuses_in_a_process_of_its_own(tmp_path: Path) -> None:
    flow, folder = study_in_folder(tmp_path)
    answered(flow, ["p1"], [])
    before = snapshot(folder)
    command = [sys.executable, "-m", "harness.cli", "collect", "export", "My-Cloze.yaml", "--db", str(flow.store.path)]
    done = subprocess.run([*command, "--out", "."], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: --out .: {REFUSAL} (My-Cloze.yaml, texts.csv)")
    assert snapshot(folder) == before


# ------------------------------------------------------------------------------------------------ long texts

PASSAGE = " ".join(f"w{i % 997}" for i in range(240_000))  # over 1 MiB, one passage


def long_texts_study(tmp_path: Path, suffix: str, kind: str = "sentence_completion") -> Path:
    texts = tmp_path / f"texts{suffix}"
    if suffix == ".csv":
        texts.write_text(f'id,text\nshort,"A short, plain sentence"\nlong,"{PASSAGE}"\n', encoding="utf-8")
    elif suffix == ".tsv":
        texts.write_text(f"id\ttext\nshort\tA short, plain sentence\nlong\t{PASSAGE}\n", encoding="utf-8")
    elif suffix == ".jsonl":
        lines = [{"id": "short", "text": "A short, plain sentence"}, {"id": "long", "text": PASSAGE}]
        texts.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    else:
        texts.write_text(f"A short, plain sentence\n{PASSAGE}\n", encoding="utf-8")
    path = tmp_path / "long.yaml"
    path.write_text(
        f"study: long\nkind: {kind}\nconsent: I agree.\ninstructions: Go.\ntexts: {{file: {texts.name}}}\n"
        "participants_per_item: 1\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".txt"])
def test_a_one_megabyte_text_is_read_whole_in_every_format(tmp_path: Path, suffix: str) -> None:
    limit = csv.field_size_limit()
    texts, items = make_items(load_study(long_texts_study(tmp_path, suffix)), None)
    assert csv.field_size_limit() == limit  # the csv module's limit is the process's again
    assert len(PASSAGE) > 1024 * 1024 and [t.text for t in texts] == ["A short, plain sentence", PASSAGE]
    main = [item for item in items if item.role == "main"]
    assert [item.n_steps for item in main] == [1, 1] and main[1].payload["words"] == PASSAGE.split()


def test_a_one_megabyte_passage_cloze_is_read_with_a_step_per_word(tmp_path: Path) -> None:
    _, items = make_items(load_study(long_texts_study(tmp_path, ".csv", "passage_cloze")), None)
    assert [item.n_steps for item in items] == [3, 239_999]  # from word 2 of 4 and of 240,000


def test_collect_check_reads_a_one_megabyte_csv_text(tmp_path: Path) -> None:
    said = run_main("collect", "check", str(long_texts_study(tmp_path, ".csv")))
    assert said.returncode == 0 and said.stdout.startswith(f"ok: {tmp_path / 'long.yaml'} (study long")
    assert "2 texts" in said.stdout


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('id,text\na,fine\nb,"never closed\nc,more\n', "line 3: not readable as CSV (unexpected end of data)"),
        ('id,text\na,fine\nb,"closed"then more\n', "line 3: not readable as CSV (',' expected after '\"')"),
        ("id,text\na,fine\nb,a NUL \x00 byte\n", "line 3: NUL byte at byte offset 23 (a binary or damaged file?)"),
    ],
)
def test_a_malformed_texts_csv_is_one_line_naming_the_file_and_line(tmp_path: Path, content: str, why: str) -> None:
    path = long_texts_study(tmp_path, ".csv")
    (tmp_path / "texts.csv").write_text(content, encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        make_items(load_study(path), None)
    assert str(caught.value).endswith(f"texts.csv: {why}") and "\n" not in str(caught.value)
    said = run_main("collect", "check", str(path), check=False)
    assert said.returncode != 0 and said.stderr.count("\n") == 1 and why in said.stderr
