"""The participant page in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by
selenium), against the real study server and database: a participant consents, reads the instructions, does the
practice, the items and the attention checks, reloads the page in the middle and continues where they were, and
sees the completion code; afterwards the database holds exactly the answers typed or clicked, and the browser
logged no error.

The games' studies use the mock model (``model: mock:x``): the page's mechanics, not a model's tokens, are under
test. Slow (a browser is started); skipped where no Chromium is installed, except where
``scripts/setup.sh --browser`` installed it (the README's test command, and CI): see ``tests/headless_chromium.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.collect.flow import shown_order
from tests.collect_server import CLOZE_STUDY, running_server, write_study
from tests.headless_chromium import chromium_or_skip

pytestmark = pytest.mark.slow
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

PASSAGES = {"a": "The cat sat on the mat.", "b": "Dogs like to run.", "c": "It was a cold night."}

WHICH_ONE_STUDY = """\
study: which-one-test
kind: which_one_game
texts: {file: texts.csv}
model: mock:x
participants_per_item: 2
items_per_participant: 3
positions: {start: 2, every: 3, per_text: 2}
consent: You are invited to play a guessing game.
instructions: Which of the two tokens came next in the original text?
practice: [{context: "The sky is", true_token: " blue", sampled_token: " banana"}]
attention_checks: {every: 2, max_failures: 0, items: [{context: "One, two, three,", true_token: " four",
                                                       sampled_token: " purple"}]}
completion: {code: WH1CH}
"""
GAME_TEXTS = (
    "id,text\na,The quick brown fox jumps over the lazy dog and runs far away.\n"
    "b,She opened the door and looked out at the rain falling on the street.\n"
)
NEXT_TOKEN_STUDY = """\
study: next-token-test
kind: next_token_game
texts: {file: texts.csv}
model: mock:x
participants_per_item: 2
items_per_participant: 1
positions: {start: 2, every: 2, per_text: 3}
consent: You are invited to play a guessing game.
instructions: Guess the next token.
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium_or_skip("1000,800") as driver:
        yield driver


def _wait(browser: Any, condition: Callable[[Any], Any], timeout: float = 15) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout, poll_frequency=0.05).until(condition)


def _by_id(browser: Any, element_id: str) -> Any:
    return browser.find_element("id", element_id)


def _shown(browser: Any, element_id: str) -> bool:
    return bool(browser.execute_script("return !document.getElementById(arguments[0]).hidden", element_id))


def _text(browser: Any, element_id: str) -> str:
    return str(_by_id(browser, element_id).get_attribute("textContent"))


def _errors(browser: Any) -> list[dict[str, Any]]:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def _consent_and_start(browser: Any, url: str) -> None:
    browser.get(url)
    _wait(browser, lambda b: _shown(b, "consent"))
    assert _by_id(browser, "consent-button").get_attribute("disabled") is not None  # not before the box is ticked
    _by_id(browser, "consent-check").click()
    _by_id(browser, "consent-button").click()
    _wait(browser, lambda b: _shown(b, "instructions"))
    _by_id(browser, "start-button").click()
    _wait(browser, lambda b: _shown(b, "item"))


def _ready(browser: Any, before: str) -> bool:
    """The page moved on: a new step is shown and can be answered, or the study is complete."""
    if _shown(browser, "complete"):
        return True
    if not _shown(browser, "item") or _text(browser, "text") + _text(browser, "progress-text") == before:
        return False
    return bool(browser.execute_script("return !document.getElementById('answer-input').disabled"))


def _type(browser: Any, word: str) -> None:
    from selenium.webdriver.common.keys import Keys

    before = _text(browser, "text") + _text(browser, "progress-text")
    _by_id(browser, "answer-input").send_keys(word + Keys.ENTER)
    _wait(browser, lambda b: _ready(b, before))


#: The progress line before each answer of ``test_a_participant_completes_a_passage_cloze_study``: it moves with
#: every word of a passage, and an attention check says only how many passages are done.
CLOZE_PROGRESS = [
    *(f"Passage 1 of 1 \u00b7 word {k} of 3" for k in (1, 2, 3)),  # the practice passage (with its badge)
    *(f"Passage 1 of 2 \u00b7 word {k} of 5" for k in (1, 2, 3, 4, 5)),
    "1 of 2 passages done",
    *(f"Passage 2 of 2 \u00b7 word {k} of 3" for k in (1, 2, 3)),
    "2 of 2 passages done",
]


def test_a_participant_completes_a_passage_cloze_study(browser: Any, tmp_path: Path) -> None:
    """The progress line moves within a passage and the bar counts words; an answer's feedback is shown only while
    the same passage goes on (never above the attention check that follows a passage, or the next passage)."""
    with running_server(write_study(tmp_path, CLOZE_STUDY)) as server:
        _consent_and_start(browser, server.url + "/?PROLIFIC_PID=browser-1")
        assert browser.title == "Research study"  # the default title, never the study's name (cloze-test)
        assert "cloze-test" not in browser.page_source
        typed: list[str] = []
        progress: list[str] = []
        reloaded = checked_after_passage = False
        while not _shown(browser, "complete"):
            text = _text(browser, "text").removesuffix("___").strip()
            practice = _shown(browser, "role")
            assert (_text(browser, "role") == "Practice") == practice
            progress.append(_text(browser, "progress-text"))
            if progress[-1] == "Passage 1 of 2 \u00b7 word 3 of 5":  # two of five words of the first of two
                assert float(_by_id(browser, "progress").get_attribute("value")) == pytest.approx(0.2)
            if "apple" in text:  # the attention check
                word = "apple"
            else:
                passage = "One two three four." if practice else next(p for p in PASSAGES.values() if
                                                                      p.startswith(text))  # fmt: skip
                word = passage.split()[len(text.split())]  # the true next word: the feedback says so
            _type(browser, word)
            typed.append(word)
            if _shown(browser, "complete"):
                break
            after = _text(browser, "text").removesuffix("___").strip()
            if word != "apple" and after == f"{text} {word}".strip():  # the same passage goes on
                assert _shown(browser, "feedback") and _text(browser, "feedback") == f"The word was {word}"
            else:  # a new item: the attention check after a passage, or the next passage
                assert not _shown(browser, "feedback") and "The word was" not in _text(browser, "feedback")
                checked_after_passage |= "apple" in after and not practice
            if len(typed) == 5 and not reloaded:  # in the middle of the first passage
                before = _text(browser, "text")
                assert before.startswith("The cat sat") and before.endswith("___")
                browser.refresh()
                _wait(browser, lambda b, before=before: _shown(b, "item") and _text(b, "text") == before)
                assert not _shown(browser, "instructions") and not _shown(browser, "feedback")
                reloaded = True
        assert reloaded and checked_after_passage
        assert progress == CLOZE_PROGRESS
        assert _text(browser, "code") == "C0MPLETE"
        assert _by_id(browser, "link").get_attribute("href") == "https://example.org/done?cc=C0MPLETE"
        assert _errors(browser) == []
        browser.get("about:blank")  # before the page's redirect to the (unreachable) platform
        rows = server.rows()
        assert [answer for _, _, _, answer, _, _ in rows] == typed
        assert len(rows) == 3 + 5 + 1 + 3 + 1  # practice, passage a, check, passage b, check
        assert all(timed_out == 0 for *_, timed_out in rows)
        roles = [r[0] for r in server.rows("SELECT role FROM assignments ORDER BY seq")]
        assert roles == ["practice", "main", "catch", "main", "catch"]
        assert server.rows("SELECT external_id, status FROM participants") == [("browser-1", "complete")]
        ms = [r[0] for r in server.rows("SELECT client_ms FROM responses")]
        assert all(isinstance(m, int) and m >= 0 for m in ms)


def test_a_participant_completes_a_which_one_study(browser: Any, tmp_path: Path) -> None:
    study = write_study(tmp_path, WHICH_ONE_STUDY, GAME_TEXTS)
    with running_server(study) as server:
        _consent_and_start(browser, server.url + "/?PROLIFIC_PID=browser-2")
        clicked: list[int] = []
        reloaded = False
        while not _shown(browser, "complete"):
            pair = [e.get_attribute("textContent") for e in browser.find_elements("css selector", "#pair .tok")]
            assert len(pair) == 2 and len(browser.find_elements("css selector", "#scale button")) == 11
            if _text(browser, "text").startswith("One, two, three,"):  # the check: give the true token 90%
                percent = 90 if pair[0] == "\u00b7four" else 10
            else:
                percent = [70, 20, 99, 1, 50][len(clicked) % 5]
            before = _text(browser, "text") + _text(browser, "progress-text")
            browser.find_element("css selector", f"#scale button[data-percent='{percent}']").click()
            clicked.append(percent)
            _wait(browser, lambda b, before=before: _shown(b, "complete") or (
                _text(b, "text") + _text(b, "progress-text") != before
                and b.execute_script("return !document.querySelector('#scale button').disabled")))  # fmt: skip
            if len(clicked) == 3 and not reloaded:  # mid-study: the same round comes back, tokens in the same order
                pair_before = [e.get_attribute("textContent") for e in browser.find_elements("css selector",
                                                                                             "#pair .tok")]  # fmt: skip
                browser.refresh()
                _wait(browser, lambda b: _shown(b, "item") and len(b.find_elements("css selector", "#pair .tok")) == 2)
                assert [
                    e.get_attribute("textContent") for e in browser.find_elements("css selector", "#pair .tok")
                ] == pair_before
                reloaded = True
        assert reloaded and _text(browser, "code") == "WH1CH" and not _shown(browser, "link-line")
        assert _errors(browser) == []
        rows = server.rows("SELECT pid, seq, answer, judgment, shown_order FROM responses ORDER BY rid")
        assert [int(answer) for _, _, answer, _, _ in rows] == clicked
        assert len(rows) == 1 + 3 + 1  # practice, three rounds, one check (after the second round)
        for pid, seq, answer, judgment, order in rows:  # the judgment is the true token's probability
            assert order == shown_order(pid, seq)
            assert judgment == pytest.approx(int(answer) / 100 if order == "true_first" else 1 - int(answer) / 100)
        assert server.rows("SELECT status FROM participants") == [("complete",)]


def test_the_next_token_game_shows_tokens_feedback_and_the_score(browser: Any, tmp_path: Path) -> None:
    study = write_study(tmp_path, NEXT_TOKEN_STUDY, GAME_TEXTS)
    with running_server(study) as server:
        _consent_and_start(browser, server.url + "/?PROLIFIC_PID=browser-3")
        assert _text(browser, "progress-text") == "Text 1 of 1 \u00b7 token 1 of 3"
        tokens = browser.find_elements("css selector", "#text .tok")
        assert len(tokens) == 3 and tokens[-1].get_attribute("textContent") == "?"  # two tokens, then the blank
        assert tokens[1].get_attribute("textContent") == "\u00b7quick"  # a space drawn as a dot
        assert _by_id(browser, "space-check").is_selected()
        _type(browser, "brown")  # with the leading space: right
        assert _text(browser, "progress-text") == "Text 1 of 1 \u00b7 token 2 of 3"
        assert _text(browser, "feedback").startswith("Correct!") and _text(browser, "score") == "Score: 1 of 1 correct"
        _by_id(browser, "space-check").click()
        _type(browser, "jumps")  # without it: wrong
        assert _text(browser, "feedback") == "Not quite. The token was \u00b7jumps"
        assert _text(browser, "score") == "Score: 1 of 2 correct"
        assert _errors(browser) == []
        assert [r[3] for r in server.rows()] == [" brown", "jumps"]


def test_a_timed_out_step_and_an_answer_from_another_tab(browser: Any, tmp_path: Path) -> None:
    """When the countdown runs out the page submits an empty, timed-out answer; when another tab already answered
    the step, the server's 409 makes the page reload the state instead of storing anything twice."""
    import httpx

    study = write_study(
        tmp_path, CLOZE_STUDY.replace("practice: [", "practice: [] #") + "time_limits: {response_seconds: 4}\n"
    )
    with running_server(study) as server:
        _consent_and_start(browser, server.url + "/?PROLIFIC_PID=browser-4")
        assert _shown(browser, "timer") and _text(browser, "timer") in ("Time left: 4 s", "Time left: 3 s")
        timer = _by_id(browser, "timer")
        assert timer.get_attribute("role") == "timer"
        assert timer.get_attribute("aria-label") in ("Time left to answer: 4 seconds", "Time left to answer: 3 seconds")
        assert _text(browser, "text") == "The ___"
        _wait(browser, lambda b: _text(b, "text") == "The cat ___", timeout=10)
        assert server.rows() == [(1, 0, 0, "", None, 1)]
        # Another tab (the same session) answers the current step; this tab's answer then gets 409 and moves on.
        other = httpx.Client(base_url=server.url, cookies={"hc_session": browser.get_cookie("hc_session")["value"]})
        info = other.get("/api/state").json()
        body = {"seq": 0, "step": 1, "answer": "sat"}
        assert other.post("/api/answer", json=body, headers={"X-CSRF-Token": info["csrf"]}).status_code == 200
        _type(browser, "on")
        assert _text(browser, "text") == "The cat sat ___"  # the step after the other tab's answer
        assert server.rows()[1:] == [(1, 0, 1, "sat", None, 0)]  # and "on" was not stored
        errors = _errors(browser)
        assert len(errors) == 1 and "409" in errors[0]["message"]  # the refused answer, logged by the browser


ONE_PLACE_STUDY = """\
study: one-place-test
title: A study of reading
kind: passage_cloze
texts: {file: texts.csv}
participants_per_item: 1
items_per_participant: 1
consent: You are invited to take part in a study of reading.
instructions: Guess each next word of the passage.
completion: {code: C0MPLETE, url: "https://example.org/done?cc=C0MPLETE"}
"""
ONE_TEXT = "id,text\na,The cat sat on the mat.\n"
CAT_WORDS = ["cat", "sat", "on", "the", "mat."]


def _no_code_and_no_link(browser: Any) -> bool:
    """Nothing on the page shows a code or a link (hidden elements do not count), and no completion code is in it."""
    shown = browser.execute_script(
        "return [...document.querySelectorAll('a, code')].filter(e => e.offsetParent !== null).length"
    )
    return shown == 0 and "C0MPLETE" not in browser.find_element("tag name", "body").text


def test_a_participant_turned_away_sees_no_code_and_no_link(browser: Any, tmp_path: Path) -> None:
    """One item, one place: while another participant holds it, a newcomer who agrees (the place was taken while
    they read the consent) and one who arrives later are told to come back, with no code and no link; once the
    holder finishes, the study is full for good. Neither newcomer is recorded as consenting or answering."""
    with running_server(write_study(tmp_path, ONE_PLACE_STUDY, ONE_TEXT)) as server:
        browser.get(server.url + "/?PROLIFIC_PID=late-1")
        _wait(browser, lambda b: _shown(b, "consent"))
        assert browser.title == "A study of reading" and "one-place-test" not in browser.page_source
        holder = server.flow.join("early-1")
        assert server.flow.consent(holder)["stored"]  # takes the only place while late-1 reads the consent
        _by_id(browser, "consent-check").click()
        _by_id(browser, "consent-button").click()
        _wait(browser, lambda b: _shown(b, "unavailable"))
        assert _text(browser, "unavailable-title") == "No place free right now"
        assert _text(browser, "unavailable-text") == (
            "All places are taken at the moment. Please do not submit a completion code. Open the same study link "
            "again in about 120 minutes, or return the study on the platform."
        )
        assert _no_code_and_no_link(browser)
        browser.get(server.url + "/?PROLIFIC_PID=late-2")  # arriving now: turned away before the consent
        _wait(browser, lambda b: _shown(b, "unavailable"))
        assert not _shown(browser, "consent") and _no_code_and_no_link(browser)
        seq = server.flow.state(holder)["seq"]
        for step, word in enumerate(CAT_WORDS):
            server.flow.answer(holder, seq, step, word)
        browser.refresh()
        _wait(browser, lambda b: _shown(b, "unavailable") and _text(b, "unavailable-title") == "The study is full")
        assert _text(browser, "unavailable-text") == (
            "This study has all the answers it needs, so there is nothing to do. Please return the study on the "
            "platform (do not submit a completion code). Thank you for your interest."
        )
        assert _no_code_and_no_link(browser) and _errors(browser) == []
        people = server.rows("SELECT external_id, consented IS NOT NULL, status FROM participants ORDER BY pid")
        assert people == [("late-1", 0, "active"), ("early-1", 1, "complete"), ("late-2", 0, "active")]
        assert server.rows() == [(holder.pid, seq, step, word, None, 0) for step, word in enumerate(CAT_WORDS)]


EXCLUDING_STUDY = ONE_PLACE_STUDY.replace("participants_per_item: 1", "participants_per_item: 3") + (
    'attention_checks: {every: 1, max_failures: 0, items: [{text: "Please type the word apple:", answer: apple}]}\n'
)


@pytest.mark.parametrize("own_code", [True, False], ids=["with-code", "without-code"])
def test_an_excluded_participant_never_sees_the_completion_code(browser: Any, tmp_path: Path, own_code: bool) -> None:
    """A participant who fails the attention check after the passage is excluded: the page thanks them and gives the
    platform's code for excluded participants when the study has one (and sends them back to its link), otherwise
    asks them to return the study; never the completion code, also after a reload."""
    study = EXCLUDING_STUDY
    if own_code:
        study = study.replace("completion: {", 'completion: {excluded_code: SCREENED, excluded_url: "https://example.org/'
                              'screened", ')  # fmt: skip
    with running_server(write_study(tmp_path, study, ONE_TEXT)) as server:
        _consent_and_start(browser, server.url + "/?PROLIFIC_PID=careless-1")
        for word in CAT_WORDS:
            _type(browser, word)
        assert "apple" in _text(browser, "text") and not _shown(browser, "feedback")  # the check, no "The word was"
        before = _text(browser, "text")
        _by_id(browser, "answer-input").send_keys("banana\n")
        _wait(browser, lambda b: _shown(b, "excluded") or _text(b, "text") != before)
        assert _shown(browser, "excluded") and not _shown(browser, "complete") and not _shown(browser, "item")
        page = browser.find_element("tag name", "body").text
        assert "Your answers did not pass the study's attention checks, so the study ends here." in page
        assert "C0MPLETE" not in page and _text(browser, "code") == ""
        if own_code:
            assert _text(browser, "excluded-code-line") == "Your code: SCREENED"
            assert _by_id(browser, "excluded-link").get_attribute("href") == "https://example.org/screened"
            assert not _shown(browser, "excluded-return") and _shown(browser, "excluded-redirect")
            browser.get("about:blank")  # before the page's redirect to the (unreachable) platform
        else:
            assert _shown(browser, "excluded-return") and _no_code_and_no_link(browser)
            assert _text(browser, "excluded-return") == (
                "Please return the study on the platform (do not submit a completion code)."
            )
            browser.refresh()
            _wait(browser, lambda b: _shown(b, "excluded"))
            assert _no_code_and_no_link(browser)
        assert _errors(browser) == []
        assert [r[3] for r in server.rows()] == [*CAT_WORDS, "banana"]
        assert len(set(server.rows("SELECT pid, seq, step FROM responses"))) == len(CAT_WORDS) + 1
        assert server.rows("SELECT external_id, status FROM participants") == [("careless-1", "excluded")]
