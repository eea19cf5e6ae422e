"""Helpers of the study server's tests: a small passage-cloze study on disk, and the real uvicorn server serving it
in this process (a thread) on a free port of 127.0.0.1, over the real SQLite database.

Why in-process: the tests then read the database the server writes directly and start in milliseconds; the
``serve`` entry point itself (its announcement line, signals) is tested in a subprocess (slow tier)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.collect.flow import StudyFlow
from harness.collect.prepare import open_study

ADMIN_TOKEN = "admin-token-for-tests-0123456789"
ROWS = "SELECT pid, seq, step, answer, judgment, timed_out FROM responses ORDER BY rid"

CLOZE_STUDY = """\
study: cloze-test
kind: passage_cloze
texts: {file: texts.csv}
participants_per_item: 3
items_per_participant: 2
consent: |
  You are invited to take part in a study of reading.

  Taking part is voluntary.
instructions: Guess each next word of the passage.
practice: ["One two three four."]
attention_checks: {every: 1, max_failures: 1, items: [{text: "Please type the word apple:", answer: apple}]}
completion: {code: C0MPLETE, url: "https://example.org/done?cc=C0MPLETE"}
"""
CLOZE_TEXTS = "id,text\na,The cat sat on the mat.\nb,Dogs like to run.\nc,It was a cold night.\n"


def write_study(folder: Path, study: str = CLOZE_STUDY, texts: str = CLOZE_TEXTS, name: str = "study.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "texts.csv").write_text(texts, encoding="utf-8")
    path = folder / name
    path.write_text(study, encoding="utf-8")
    return path


@dataclass
class Running:
    """A server running in a thread: its base URL, the flow behind it and the database path."""

    url: str
    flow: StudyFlow
    db: Path

    def rows(self, query: str = ROWS) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as db:
            return [tuple(r) for r in db.execute(query)]


@contextmanager
def running_server(
    study_path: Path, root_path: str = "", *, allowed_hosts: Sequence[str] = ("example.org",), joins_per_minute: int = 0
) -> Iterator[Running]:
    """The study's app on uvicorn in a daemon thread (``serving_in_thread``); stopped when the block ends.

    By default the server also answers under ``example.org`` (the proxy's public name of
    ``tests/test_collect_web.py``'s proxy test) and does not limit joins; ``tests/test_collect_hosts.py`` sets both."""
    from harness.collect.web import serving_in_thread

    db = study_path.with_suffix(".sqlite")
    flow = open_study(study_path, db)
    with serving_in_thread(
        flow, ADMIN_TOKEN, root_path=root_path, allowed_hosts=allowed_hosts, joins_per_minute=joins_per_minute
    ) as url:
        yield Running(url, flow, db)
