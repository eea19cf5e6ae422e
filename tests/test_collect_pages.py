"""The admin page's plots and the answers-per-minute count, without a server: ``harness.collect.activity`` on a
database made by hand (every count worked out by hand below), and ``harness.collect.pages``' SVG for 3 and for 500
items (one bar per item, every text escaped, no style attribute, which the Content-Security-Policy would refuse)."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import pytest

from harness.collect.activity import answers_per_minute
from harness.collect.pages import admin_page, coverage_plot, study_page

NOW = 1_700_000_000.0


def _responses(received: list[float]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE responses (rid INTEGER PRIMARY KEY, received REAL NOT NULL)")
    db.executemany("INSERT INTO responses (received) VALUES (?)", [(t,) for t in received])
    return db


def test_answers_per_minute_counts_each_minute_oldest_first() -> None:
    db = _responses([
        NOW,  # the last minute, (now - 60, now]: its upper edge counts
        NOW - 30,
        NOW - 59.9,
        NOW - 60,  # the minute before, (now - 120, now - 60]: a minute's lower edge belongs to the minute before it
        NOW - 61,
        NOW - 119,
        NOW - 300,  # (now - 360, now - 300]: 5 minutes before the last one, per_minute[-6]
        NOW - 599,  # (now - 600, now - 540], per_minute[-10]: within the last 10 minutes
        NOW - 600,  # (now - 660, now - 600], per_minute[-11]: not within the last 10 minutes
        NOW - 601,  # per_minute[-11] too
        NOW - 3599,  # the oldest minute of 60, (now - 3600, now - 3540]: per_minute[0]
        NOW - 3600,  # exactly 60 minutes ago: outside the window
        NOW + 5,  # after now (a clock set back): not counted
    ])  # fmt: skip
    result = answers_per_minute(db, NOW)
    per_minute = result["per_minute"]
    assert len(per_minute) == 60
    assert per_minute[-1] == 3 and per_minute[-2] == 3 and per_minute[-6] == 1
    assert per_minute[-10] == 1 and per_minute[-11] == 2 and per_minute[0] == 1
    assert sum(per_minute) == 3 + 3 + 1 + 1 + 2 + 1
    assert result["last_minute"] == 3
    assert result["last_10_minutes"] == 3 + 3 + 1 + 1
    assert answers_per_minute(db, NOW, minutes=2) == {"last_minute": 3, "last_10_minutes": 8, "per_minute": [3, 3]}


def test_answers_per_minute_of_an_empty_study_and_a_real_store(tmp_path: Any) -> None:
    assert answers_per_minute(_responses([]), NOW, minutes=3) == {
        "last_minute": 0,
        "last_10_minutes": 0,
        "per_minute": [0, 0, 0],
    }
    with pytest.raises(ValueError):
        answers_per_minute(_responses([]), NOW, minutes=0)
    from harness.collect.store import StudyStore

    store = StudyStore(tmp_path / "s.sqlite")  # the real schema: received is a unix time in seconds
    with store.write() as db:
        db.execute("INSERT INTO participants (external_id, id_source, session, csrf, created) "
                   "VALUES ('p', 'url', 's', 'c', 0)")  # fmt: skip
        db.executemany(
            "INSERT INTO responses (pid, seq, item_id, step, answer, received) VALUES (1, 0, 'a', ?, 'w', ?)",
            [(0, NOW - 10), (1, NOW - 70), (2, NOW - 75)],
        )
    assert answers_per_minute(store.read(), NOW, minutes=3)["per_minute"] == [0, 2, 1]
    store.close()


def _items(n: int, **overrides: Any) -> list[dict[str, Any]]:
    return [
        {"item_id": f"item-{i}", "target": 4, "finished": i % 5, "in_progress": i % 2, "released": 0, "steps": 30}
        | overrides
        for i in range(n)
    ]


def _report(items: list[dict[str, Any]], activity: dict[str, Any] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {"study": "s", "kind": "passage_cloze", "items": items, "n_items": len(items)}
    if activity is not None:
        report["activity"] = activity
    return report


def test_the_coverage_plot_has_one_bar_per_item_with_its_numbers_escaped() -> None:
    items = [
        {"item_id": "<b>", "target": 3, "finished": 1, "in_progress": 1, "released": 2, "steps": 5},
        {"item_id": "a&b", "target": 3, "finished": 3, "in_progress": 0, "released": 0, "steps": 5},
        {"item_id": "c", "target": 3, "finished": 0, "in_progress": 0, "released": 0, "steps": 5},
    ]
    html = admin_page("s", "passage_cloze", _report(items))
    svg = html[html.index('<svg class="plot"') : html.index("</svg>", html.index('<svg class="plot"'))]
    assert svg.count('<g class="item') == 3
    assert "<title>&lt;b&gt;: 1 finished, 1 in progress, target 3, 2 released (abandoned)</title>" in svg
    assert ">&lt;b&gt;</text>" in svg and ">a&amp;b</text>" in svg  # labels under the 3 wide bars
    assert "<b>" not in html and "a&b" not in html
    assert svg.count('class="finished"') == 2 and svg.count('class="progress"') == 1  # none drawn for 0
    assert svg.count('<g class="item done">') == 1
    assert "1 of 3 items at target" in svg
    assert " style=" not in html and "<script" not in html  # the CSP allows neither
    # the table with the exact numbers stays
    assert "<h2>items</h2>" in html and "<td>&lt;b&gt;</td>" in html


def test_the_coverage_plot_scales_to_500_items() -> None:
    plot = coverage_plot(_items(500))
    assert len(plot["bars"]) == 500 and len(plot["rows"]) > 1  # wrapped into rows
    assert all(bar["label"] is None for bar in plot["bars"])  # too narrow for labels: the titles have the ids
    xs = {float(bar["x"]) for bar in plot["bars"]}
    assert max(xs) + float(plot["bars"][0]["width"]) <= plot["width"]  # nothing drawn off the plot
    html = admin_page("s", "passage_cloze", _report(_items(500)))
    assert html.count('<g class="item') == 500 and len(html) < 400_000
    # the bars of one item are inside the plot's height, and the finished part never above the tallest bar
    height = float(plot["height"])
    assert all(0 <= float(bar["target_y"]) <= height for bar in plot["bars"])
    three = coverage_plot(_items(3))
    assert len(three["rows"]) == 1 and all(bar["label"] for bar in three["bars"])


def test_the_activity_strip_shows_every_minute_and_the_two_counts() -> None:
    activity = {"last_minute": 2, "last_10_minutes": 7, "per_minute": [0] * 55 + [1, 0, 3, 1, 2]}
    html = admin_page("s", "passage_cloze", _report(_items(3), activity))
    strip = html[html.index('<svg class="strip"') : html.index("</svg>", html.index('<svg class="strip"'))]
    assert strip.count('<g class="minute">') == 60 and strip.count('class="count"') == 4  # no bar for 0
    assert "<title>2 answers in the last minute</title>" in strip
    assert "<title>3 answers 2 to 3 minutes ago</title>" in strip
    assert '<strong id="last-minute">2</strong>' in html and '<strong id="last-10-minutes">7</strong>' in html
    assert "<h2>activity</h2>" not in html  # drawn once, as the strip, not again as a list of 60 numbers
    heights = [float(h) for h in re.findall(r'class="count" x="[\d.]+" y="[\d.]+" width="6" height="([\d.]+)"', strip)]
    assert max(heights) == 40 and min(heights) > 0
    without = admin_page("s", "passage_cloze", _report(_items(3)))
    assert '<svg class="strip"' not in without


def test_the_participant_page_title_is_the_one_given() -> None:
    html = study_page("Reading <study>")
    assert "<title>Reading &lt;study&gt;</title>" in html
    assert " style=" not in html and "<script src=" in html and "<script>" not in html
