"""``harness collect export`` (``harness/collect/export*.py``): each kind's files on small studies answered through
the flow, with the values written down by hand; the manifest's exclusions and counts; pseudonyms; and the Provo
replay, which proves that a study collected this way evaluates exactly as the published norms do.

Why the replay: the export is only useful if the harness reads it as it reads the real thing. Real Provo responses
are typed into a study over Provo's own passages, exported, and the human-only ``provo`` task is run on the export
and on the original data; every human metric and every position's counts must be the same."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.analyses.relative_judgments import read_rounds
from harness.collect.export import export_study
from harness.collect.flow import StudyFlow
from harness.collect.prepare import open_study
from harness.instances import ClozeInstance
from harness.plugins.loaders.provo import load_provo
from tests.conftest import run_main
from tests.helpers import require_provo

TIMEOUT = object()  # a scripted answer that times out


def make_study(tmp_path: Path, body: str, texts: str) -> StudyFlow:
    (tmp_path / "texts.csv").write_text(texts, encoding="utf-8")
    path = tmp_path / "study.yaml"
    path.write_text("consent: I agree.\ninstructions: Go.\ntexts: {file: texts.csv}\n" + body, encoding="utf-8")
    return open_study(path, tmp_path / "study.sqlite")


def take_part(flow: StudyFlow, external_id: str, answers: list[Any], check: Any = "apple") -> None:
    """Answer the main steps with ``answers`` in order (attention checks with ``check``) until done."""
    person = flow.join(external_id)
    flow.consent(person)
    state = flow.state(person)
    left = list(answers)
    while state["phase"] == "item":
        given = check if state["role"] == "catch" else left.pop(0)
        timed_out = given is TIMEOUT
        answer = None if timed_out else given
        state = flow.answer(person, state["seq"], state["step"], answer, 1000 + state["step"], timed_out)["state"]
    assert not left, f"{external_id} had answers left: {left}"


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


CLOZE_TEXTS = "id,text\ns1,Once upon a time\ns2,She sells sea shells\n"
CLOZE_STUDY = (
    "study: tiny-cloze\nkind: passage_cloze\nparticipants_per_item: 3\nitems_per_participant: 1\nallow_skip: true\n"
    "attention_checks: {every: 1, max_failures: 0, items: [{text: 'Type apple:', answer: apple}]}\n"
)


def answered_cloze(tmp_path: Path) -> StudyFlow:
    """Seven participants: p0 fails the check (excluded, s1 freed); p1, p3, p5 get s1 and p2, p4, p6 get s2."""
    flow = make_study(tmp_path, CLOZE_STUDY, CLOZE_TEXTS)
    take_part(flow, "p0", ["upon", "upon", "upon"], check="no")
    take_part(flow, "p1", ["upon", "a", "time"])
    take_part(flow, "p2", ["sells", "sea", "shells"])
    take_part(flow, "p3", ["Upon", "the", ""])
    take_part(flow, "p4", ["sold", "sea", "shells"])
    take_part(flow, "p5", ["upon", "a", TIMEOUT])
    take_part(flow, "p6", ["sells", "the", "shells"])
    return flow


def test_a_passage_cloze_export_is_the_provo_norms_layout_and_a_task_file(tmp_path: Path) -> None:
    flow = answered_cloze(tmp_path)
    out = tmp_path / "export"
    manifest = export_study(flow, out, hash_ids=False)

    norms = read_csv(out / "provo" / "Provo_Corpus-Predictability_Norms.csv")
    got = [(r["Text_ID"], r["Word_Number"], r["Word"], r["Response"], r["Response_Count"], r["Total_Response_Count"])
           for r in norms]  # fmt: skip
    assert got == [
        ("1", "2", "upon", "upon", "2", "3"), ("1", "2", "upon", "Upon", "1", "3"),
        ("1", "3", "a", "a", "2", "3"), ("1", "3", "a", "the", "1", "3"),
        ("1", "4", "time", "time", "1", "1"),
        ("2", "2", "sells", "sells", "2", "3"), ("2", "2", "sells", "sold", "1", "3"),
        ("2", "3", "sea", "sea", "2", "3"), ("2", "3", "sea", "the", "1", "3"),
        ("2", "4", "shells", "shells", "3", "3"),
    ]  # fmt: skip
    assert {r["Text"] for r in norms} == {"Once upon a time", "She sells sea shells"}
    assert norms[0]["Response_Proportion"] == "0.6667" and norms[0]["Word_Unique_ID"] == "1-2"

    responses = read_csv(out / "responses.csv")
    assert list(responses[0]) == ["text_id", "word_num", "context", "target_word", "response", "participant",
                                  "client_ms", "server_ms"]  # fmt: skip
    assert all(int(r.pop("server_ms")) >= 0 for r in responses)
    assert responses[0] == {"text_id": "s1", "word_num": "2", "context": "Once", "target_word": "upon",
                            "response": "upon", "participant": "p1", "client_ms": "1000"}  # fmt: skip
    assert len(responses) == 16 and "p0" not in {r["participant"] for r in responses}

    # The provo loader reads the export as it reads the official norms (responses normalised: Upon -> upon).
    instances = {i.id: i for i in load_provo({"path": "provo"}, out).instances if isinstance(i, ClozeInstance)}
    assert sorted(instances) == ["1-2", "1-3", "1-4", "2-2", "2-3", "2-4"]
    assert instances["1-2"].human_counts == {"upon": 3} and instances["1-2"].context == "Once"
    assert instances["2-3"].human_counts == {"sea": 2, "the": 1} and instances["2-3"].target == "sea"

    counts = manifest["counts"]
    assert counts["responses_exported"] == 16 and counts["participants_exported"] == 6
    assert counts["missing"] == {"empty": 1, "timed_out": 1}
    assert counts["not_exported"] == {"excluded_participants": 3, "practice_and_catch": 7}
    assert counts["participants"] == {
        "total": 7, "consented": 7, "not_consented": 0, "active": 0, "complete": 6, "excluded": 1,
    }  # fmt: skip
    assert manifest["exclusions"] == [
        {"participant": "p0", "reason": "failed 1 attention check(s), more than the 0 allowed"}
    ]
    assert manifest["provo_text_ids"] == {"s1": 1, "s2": 2}
    assert [(c["item_id"], c["finished"], c["participants_exported"], c["responses_exported"])
            for c in manifest["coverage"]] == [("s1", 3, 3, 7), ("s2", 3, 3, 9)]  # fmt: skip
    assert set(manifest["files"]) == {"responses.csv", "provo/Provo_Corpus-Predictability_Norms.csv",
                                      "tiny-cloze.yaml"}  # fmt: skip
    for name, entry in manifest["files"].items():
        assert len(entry["sha256"]) == 64 and entry["bytes"] == (out / name).stat().st_size
    assert json.loads((out / "manifest.json").read_text()) == manifest


def test_both_tasks_run_on_a_cloze_export(tmp_path: Path) -> None:
    """``harness run --tasks provo --human-only --data-dir OUT`` and ``--tasks OUT/<study>.yaml`` both run."""
    out = tmp_path / "export"
    export_study(answered_cloze(tmp_path), out, hash_ids=False)
    run_main("run", "--tasks", "provo", "--human-only", "--data-dir", str(out), "--output-dir", str(tmp_path / "a"))
    run_main("run", "--tasks", str(out / "tiny-cloze.yaml"), "--human-only", "--data-dir", str(out),
             "--output-dir", str(tmp_path / "b"))  # fmt: skip
    provo = json.loads((tmp_path / "a" / "human" / "results.json").read_text())
    mine = json.loads((tmp_path / "b" / "human" / "results.json").read_text())
    assert provo["n-samples"]["provo"]["effective"] == mine["n-samples"]["tiny-cloze"]["effective"] == 6
    # The metrics with no random split agree between the two readings of the same responses.
    for metric in ("entropy_human", "top1_human_majority", "top1_human_guess"):
        assert math.isclose(provo["metrics"]["provo"][metric]["value"], mine["metrics"]["tiny-cloze"][metric]["value"])


def test_pseudonyms_are_stable_across_exports_and_are_not_the_ids(tmp_path: Path) -> None:
    flow = make_study(
        tmp_path,
        "study: sc\nkind: sentence_completion\nparticipants_per_item: 2\nitems_per_participant: 1\n",
        "id,text\n1,The cat sat on the mat\n2,Dogs like to run\n",
    )
    for pid, word in (("PID-A", "mat"), ("PID-B", "run"), ("PID-C", "rug"), ("PID-D", "walk")):
        take_part(flow, pid, [word])
    plain = export_study(flow, tmp_path / "plain", hash_ids=False)
    first = export_study(flow, tmp_path / "one", hash_ids=True)
    second = export_study(flow, tmp_path / "two", hash_ids=True)
    names = [[r["participant"] for r in read_csv(tmp_path / d / "responses.csv")] for d in ("plain", "one", "two")]
    assert names[0] == ["PID-A", "PID-C", "PID-B", "PID-D"]  # sentence 1's responses, then sentence 2's
    assert names[1] == names[2] and len(set(names[1])) == 4
    assert all(len(n) == 16 and int(n, 16) >= 0 and not n.startswith("PID") for n in names[1])
    salt = flow.store.meta("export_salt")
    assert salt is not None and len(salt) == 64 and salt not in json.dumps(first)
    assert first["files"]["responses.csv"] == second["files"]["responses.csv"]
    assert "pseudonyms" in first["participant_ids"] and plain["participant_ids"] == "the platform ids as given"
    # A sentence's word number is its last word's (the text ids are Provo-like already: no renumbering).
    norms = read_csv(tmp_path / "plain" / "provo" / "Provo_Corpus-Predictability_Norms.csv")
    assert [(r["Text_ID"], r["Word_Number"], r["Response"]) for r in norms] == [
        ("1", "6", "mat"), ("1", "6", "rug"), ("2", "4", "run"), ("2", "4", "walk"),
    ]  # fmt: skip
    assert "provo_text_ids" not in plain


GAME_TEXTS = "id,text\na,The cat sat on the mat today.\nb,Dogs like to run in the park.\n"


def test_next_token_game_export_counts_top1_by_hand(tmp_path: Path) -> None:
    flow = make_study(
        tmp_path,
        "study: nt\nkind: next_token_game\nmodel: mock:x\npositions: {start: 2, every: 2, per_text: 3}\n"
        "participants_per_item: 2\nitems_per_participant: 1\nallow_skip: true\n",
        GAME_TEXTS,
    )
    # Positions 2, 4, 6: a's true tokens ' sat', ' the', ' today.'; b's ' to', ' in', ' park.'.
    take_part(flow, "p1", [" sat", "the", " today."])  # a: right, wrong (no space), right
    take_part(flow, "p2", [" to", " on", " park"])  # b: right, wrong, wrong
    take_part(flow, "p3", [" sat", " the", ""])  # a: right, right, skipped
    take_part(flow, "p4", [" in", " in", " park."])  # b: wrong, right, right
    out = tmp_path / "export"
    manifest = export_study(flow, out, hash_ids=False)
    guesses = [json.loads(line) for line in (out / "guesses.jsonl").read_text().splitlines()]
    assert all(g.pop("server_ms") >= 0 for g in guesses)
    assert guesses[0] == {
        "text_id": "a", "position": 2, "position_id": "a-2", "context": "The cat", "true_token": " sat",
        "guess": " sat", "correct": True, "participant": "p1", "client_ms": 1000,
    }  # fmt: skip
    assert len(guesses) == 11 and sum(g["correct"] for g in guesses) == 7
    top1 = json.loads((out / "top1.json").read_text())
    human = top1["human"]
    assert (human["n"], human["correct"], human["positions"], human["participants"]) == (11, 7, 6, 4)
    assert math.isclose(human["accuracy"], 7 / 11)
    assert math.isclose(human["mean_over_positions"], (1 + 0.5 + 1 + 0.5 + 0.5 + 0.5) / 6)
    per = {p["position_id"]: (p["n"], p["correct"]) for p in top1["positions"]}
    assert per == {"a-2": (2, 2), "a-4": (2, 1), "a-6": (1, 1), "b-2": (2, 1), "b-4": (2, 1), "b-6": (2, 1)}
    assert top1["model"]["positions"] == 6 and all("model_top1" in p for p in top1["positions"])
    assert manifest["counts"]["missing"] == {"empty": 1, "timed_out": 0} and manifest["top1"] == human


def test_which_one_game_export_is_a_rounds_file_human_perplexity_reads(tmp_path: Path) -> None:
    flow = make_study(
        tmp_path,
        "study: wo\nkind: which_one_game\nmodel: mock:x\npositions: {start: 2, every: 3}\n"
        "participants_per_item: 2\nitems_per_participant: 4\n",
        GAME_TEXTS,
    )
    take_part(flow, "ann", [80, 80, 80, 80])
    take_part(flow, "bob", [30, 60, TIMEOUT, 99])
    out = tmp_path / "export"
    manifest = export_study(flow, out, hash_ids=False)
    items = {i.item_id: i.payload for i in flow.store.items("main")}
    stored = {(r["external_id"], r["item_id"]): r for r in flow.store.responses()}
    lines = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert len(lines) == 7 and manifest["counts"]["missing"] == {"empty": 0, "timed_out": 1}
    for line in lines:
        item_id = f"{line['position_id']}-s{line['meta']['sample']}"
        payload, row = items[item_id], stored[(line["judge"], item_id)]
        shown = int(row["answer"]) / 100  # the percentage for the token shown first
        true_first = line["meta"]["shown_order"] == "true_first"
        assert math.isclose(line["judgment"], shown if true_first else 1 - shown)
        for field in ("position_id", "context", "true_token", "sampled_token", "generator_prob", "generator_true_prob"):
            assert line[field] == payload[field]
        assert line["meta"].pop("server_ms") >= 0
        assert line["meta"] == {"sample": 0, "shown_order": row["shown_order"], "client_ms": row["client_ms"]}
    assert set(lines[0]) == {"position_id", "context", "true_token", "sampled_token", "generator_prob", "judgment",
                             "judge", "generator_true_prob", "meta"}  # fmt: skip
    rounds = read_rounds(out / "rounds.jsonl")
    assert len(rounds) == 7 and {r.judge for r in rounds} == {"ann", "bob"}
    result = run_main("human-perplexity", str(out / "rounds.jsonl"), "--rounded")
    assert "7 rounds at 4 positions" in result.stdout


# ------------------------------------------------------------------------------------------------ Provo replay


def replay_and_compare(tmp_path: Path, text_ids: list[int], via: str) -> dict[str, Any]:
    from scripts.replay_provo_collect import replay

    summary = replay(require_provo(), tmp_path, text_ids, via, workers=16)
    comparison = summary["comparison"]
    assert comparison["metric_differences"] == [] and comparison["largest_difference"] <= 1e-9
    assert comparison["n_positions_differing"] == 0 and comparison["equal"]
    assert comparison["positions_export"] == comparison["positions_original"] > 0
    assert comparison["metrics"] >= 15
    assert summary["responses_left_unused"] == 0
    assert summary["responses_exported"] == summary["provo_responses"]
    return summary


def test_provo_replayed_through_the_flow_evaluates_as_provo(tmp_path: Path) -> None:
    """Passages 36 and 37 (the two shortest), typed through the study flow: the human-only provo task on the export
    equals the task on the original rows."""
    summary = replay_and_compare(tmp_path, [36, 37], "flow")
    assert summary["participants"] == 81 and summary["comparison"]["positions_export"] == 76


@pytest.mark.slow
def test_provo_replayed_over_http_evaluates_as_provo(tmp_path: Path) -> None:
    """The same through the real server over HTTP, with passage 55, which lacks word 3 (every answer there empty)."""
    pytest.importorskip("uvicorn")
    summary = replay_and_compare(tmp_path, [36, 37, 55], "http")
    assert summary["missing_answers"]["empty"] > 0
    print(f"provo replay over HTTP: {json.dumps({k: v for k, v in summary.items() if k != 'comparison'})}")


# ------------------------------------------------------------------------------------------------ the commands


def test_check_status_and_export_commands(tmp_path: Path) -> None:
    flow = answered_cloze(tmp_path)
    study, db = str(flow.study.path), str(flow.store.path)
    checked = run_main("collect", "check", study)
    assert checked.stdout.startswith(f"ok: {study} (study tiny-cloze, passage_cloze, version {flow.study.digest})")
    assert "2 items (6 steps)" in checked.stdout and "6 item assignments to fill" in checked.stdout
    table = run_main("collect", "status", study, "--db", db).stdout
    assert "participants: 7 (7 consented; 0 not consented, 0 active, 6 complete, 1 excluded)" in table
    assert "items at target: 2 of 2 (complete)" in table and "  p0: failed 1 attention check(s)" in table
    report = json.loads(run_main("collect", "status", study, "--db", db, "--json").stdout)
    assert report["items_at_target"] == 2 and report["excluded"][0]["participant"] == "p0"
    out = tmp_path / "cli-export"
    said = run_main("collect", "export", study, "--db", db, "--out", str(out), "--hash-ids").stdout
    assert said.startswith("exported 16 responses of 6 participants (passage_cloze)")
    assert f"harness run --tasks provo --human-only --data-dir {out}" in said
    assert json.loads((out / "manifest.json").read_text())["exclusions"][0]["participant"] != "p0"


def test_command_errors_are_one_line_with_status_2(tmp_path: Path) -> None:
    flow = answered_cloze(tmp_path)
    study = str(flow.study.path)
    missing = run_main("collect", "status", study, "--db", str(tmp_path / "none.sqlite"), check=False)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no study database" in missing.stderr
    (tmp_path / "a-file").write_text("x")
    blocked = run_main("collect", "export", study, "--db", str(flow.store.path), "--out", str(tmp_path / "a-file"),
                       check=False)  # fmt: skip
    assert blocked.returncode == 2 and "is a file, expected a folder" in blocked.stderr
    bad_port = run_main("collect", "serve", study, "--port", "70000", check=False)
    assert bad_port.returncode == 2 and "expected a port from 0 to 65535" in bad_port.stderr


def test_the_admin_token_is_made_once_private_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cli.collect import ADMIN_TOKEN_ENV, admin_token
    from harness.errors import HarnessError

    monkeypatch.delenv(ADMIN_TOKEN_ENV, raising=False)
    db = tmp_path / "study.sqlite"
    token, where = admin_token(None, db)
    path = tmp_path / "study.sqlite.admin-token"
    assert where == f"in {path} (new, mode 600)" and len(token) >= 40
    assert path.stat().st_mode & 0o777 == 0o600 and token not in where
    assert admin_token(None, db) == (token, f"in {path}")  # a restart keeps the admin's link working
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "from-the-environment-0123")
    assert admin_token(None, db) == ("from-the-environment-0123", f"from ${ADMIN_TOKEN_ENV}")
    given = tmp_path / "admin.token"
    given.write_text("a-token-from-a-file-0123\n")
    given.chmod(0o644)
    with pytest.raises(HarnessError, match="readable by others"):
        admin_token(str(given), db)
    given.chmod(0o600)
    assert admin_token(str(given), db)[0] == "a-token-from-a-file-0123"


def test_the_server_measures_each_answers_time_from_the_previous_answer(tmp_path: Path) -> None:
    """``server_ms`` is the server's own clock: consent at 100 s, answers stored at 103.5 s and 110 s."""
    flow = make_study(
        tmp_path, "study: timed\nkind: passage_cloze\nparticipants_per_item: 1\n", "id,text\na,One two three\n"
    )
    now = [100.0]
    flow.clock = lambda: now[0]
    person = flow.join("p1")
    flow.consent(person)
    now[0] = 103.5
    flow.answer(person, 0, 0, "two", 50)  # the client says 50 ms; the server saw 3.5 s
    now[0] = 110.0
    flow.answer(person, 0, 1, "four", 60)
    export_study(flow, tmp_path / "out", hash_ids=False)
    rows = read_csv(tmp_path / "out" / "responses.csv")
    assert [(r["response"], r["client_ms"], r["server_ms"]) for r in rows] == [
        ("two", "50", "3500"),
        ("four", "60", "6500"),
    ]
