"""Screenshots of the `harness collect` participant pages and the admin page, for docs/collect.md.

Serves the example studies of ``examples/collect/`` (copied into a temporary folder, so no database is left beside
them) from this process, plays them in a headless Chromium as a participant would, and saves each participant page
twice under ``docs/collect/``, as a phone and a laptop show it (``NAME-500.png`` and ``NAME-1280.png``: 500x800 and
1280x800 viewports), and the admin page at 1280 (``admin-1280.png``), after a scripted crowd answered over the last
hour (so its plots have something to show). Needs the ``collect`` extra, selenium and Debian's ``chromium`` and
``chromium-driver`` (``scripts/setup.sh --browser``).

    .venv/bin/python scripts/collect_screenshots.py                 # the games on the packaged SmolLM2
    .venv/bin/python scripts/collect_screenshots.py --model mock:x  # the games on the mock model (seconds)
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.collect.flow import StudyFlow  # noqa: E402
from harness.collect.prepare import open_study  # noqa: E402
from harness.collect.web import serving_in_thread  # noqa: E402
from tests.headless_chromium import start_chromium  # noqa: E402

EXAMPLES = REPO / "examples" / "collect"
TOKEN = "screenshot-admin-token"
#: The viewport widths every participant page is taken at (a phone held upright, a laptop), and their height.
WIDTHS, HEIGHT = (500, 1280), 800


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "collect", help="folder of the PNGs")
    parser.add_argument("--model", help="the games' model instead of the examples' (e.g. mock:x)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in ("passages.csv", "sentences.csv"):
            shutil.copy(EXAMPLES / name, folder / name)
        driver = _browser()
        try:
            # the passage cloze with a response time limit, so that its pages show the timer
            timed = {r"time_limits: \{session_minutes: 60\}": "time_limits: {response_seconds: 60, "
                     "session_minutes: 60}"}  # fmt: skip
            _passage_cloze(driver, _study(folder, "passage-cloze", edits=timed), args.out)
            _next_token(driver, _study(folder, "next-token-game", model=args.model), args.out)
            _which_one(driver, _study(folder, "which-one-game", model=args.model), args.out)
            one_place = {r"participants_per_item: \d+": "participants_per_item: 1",
                         r"texts: \{file: sentences.csv\}": "texts: {file: sentences.csv, limit: 1}"}  # fmt: skip
            _turned_away(driver, _study(folder, "sentence-completion", edits=one_place), args.out)
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            if errors:
                raise SystemExit(f"the browser logged errors: {errors}")
        finally:
            driver.quit()
    total = 0
    for png in sorted(args.out.glob("*.png")):
        total += png.stat().st_size
        print(f"{png}  {png.stat().st_size // 1024} KiB")
    print(f"total {total // 1024} KiB")


def _study(folder: Path, name: str, model: str | None = None, edits: dict[str, str] | None = None) -> Path:
    """The example study copied into ``folder``, with another model for the games, or other edits, if asked."""
    text = (EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8")
    if model:
        text = re.sub(r"(?m)^model: .*$", f"model: {model}", text)
    for pattern, replacement in (edits or {}).items():
        text, n = re.subn(f"(?m)^{pattern}$", replacement, text)
        if n != 1:
            raise SystemExit(f"{name}.yaml: no line matches {pattern!r}")
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _browser() -> Any:
    try:
        return start_chromium(f"{WIDTHS[-1]},{HEIGHT}", "--hide-scrollbars")
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None


# ------------------------------------------------------------------------------------------------ page helpers


def _wait(driver: Any, condition: Callable[[Any], Any]) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 20, poll_frequency=0.05).until(condition)


def _shown(driver: Any, element_id: str) -> bool:
    return bool(driver.execute_script("return !document.getElementById(arguments[0]).hidden", element_id))


def _text(driver: Any, element_id: str) -> str:
    return str(driver.find_element("id", element_id).get_attribute("textContent"))


def _ready(driver: Any, before: str) -> bool:
    if any(_shown(driver, end) for end in ("complete", "excluded", "unavailable")):
        return True
    now = _text(driver, "text") + _text(driver, "progress-text")
    return now != before and bool(driver.execute_script("return !document.getElementById('answer-input').disabled"))


def _type(driver: Any, word: str) -> None:
    from selenium.webdriver.common.keys import Keys

    before = _text(driver, "text") + _text(driver, "progress-text")
    driver.find_element("id", "answer-input").send_keys(word + Keys.ENTER)
    _wait(driver, lambda d: _ready(d, before))


def _click(driver: Any, percent: int) -> None:
    before = _text(driver, "text") + _text(driver, "progress-text")
    driver.find_element("css selector", f"#scale button[data-percent='{percent}']").click()
    _wait(driver, lambda d: _shown(d, "complete") or (_text(d, "text") + _text(d, "progress-text") != before))
    _wait(driver, lambda d: _shown(d, "complete") or d.execute_script(
        "return !document.querySelector('#scale button').disabled"))  # fmt: skip


def _consent(driver: Any, url: str, out: Path | None = None) -> None:
    driver.get(url)
    _wait(driver, lambda d: _shown(d, "consent"))
    driver.find_element("id", "consent-check").click()
    if out:
        _shot(driver, out, "consent")
    driver.find_element("id", "consent-button").click()
    _wait(driver, lambda d: _shown(d, "instructions"))
    if out:
        _shot(driver, out, "instructions")
    driver.find_element("id", "start-button").click()
    _wait(driver, lambda d: _shown(d, "item"))


def _viewport(driver: Any, width: int) -> None:
    metrics = {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


def _shot(driver: Any, out: Path, name: str, widths: tuple[int, ...] = WIDTHS) -> None:
    """``out/NAME-WIDTH.png`` for each width; the page is left at the widest."""
    for width in widths:
        _viewport(driver, width)
        time.sleep(0.25)  # let the page settle (layout, focus ring, fonts)
        driver.save_screenshot(str(out / f"{name}-{width}.png"))
    _viewport(driver, WIDTHS[-1])


# ------------------------------------------------------------------------------------------------ the studies


def _passage_cloze(driver: Any, study: Path, out: Path) -> None:
    """Consent, instructions, a passage mid-way, the attention check right after the passage (no feedback line),
    the excluded page (the check failed); then a scripted crowd, and the admin page."""
    flow = open_study(study, study.with_suffix(".sqlite"))
    with open(EXAMPLES / "passages.csv", encoding="utf-8", newline="") as f:
        passages = [row["text"] for row in csv.DictReader(f)]
    with serving_in_thread(flow, TOKEN) as url:
        _consent(driver, url + "/?PROLIFIC_PID=screenshot-1", out)
        guesses = iter(["sun", "was", "shining", "and", "the", "birds", "were", "singing", "in", "the", "trees"])
        while _shown(driver, "role"):  # the practice passage
            _type(driver, next(guesses, "word"))
        for word in ["morning", "the", "new", "boat", "left"]:
            _type(driver, word)
        driver.find_element("id", "answer-input").send_keys("harbour")
        _shot(driver, out, "passage-cloze")
        driver.find_element("id", "answer-input").clear()
        while "orange" not in _text(driver, "text"):  # the rest of the passage, word by word
            shown = _text(driver, "text").removesuffix("___").split()
            passage = next(p.split() for p in passages if p.split()[: len(shown)] == shown)
            _type(driver, passage[len(shown)])
        _shot(driver, out, "attention-check")
        _type(driver, "apple")  # not orange: the check fails, and the example excludes at the first failure
        _wait(driver, lambda d: _shown(d, "excluded"))
        _shot(driver, out, "excluded")
        _crowd(flow, passages)
        driver.get(f"{url}/admin?token={TOKEN}")
        _wait(driver, lambda d: d.find_elements("css selector", "main.admin"))
        _shot(driver, out, "admin", widths=(1280,))


def _crowd(flow: StudyFlow, passages: list[str], people: int = 24, minutes: int = 55) -> None:
    """People answering through the flow over the last ``minutes`` (its clock set back meanwhile), one starting
    every couple of minutes, a word every few seconds; the last few are still in their passage."""
    now = time.time()
    clock = [now]
    flow.clock = lambda: min(clock[0], now)
    try:
        for i in range(people):
            clock[0] = now - 60 * minutes + i * 60 * minutes / people
            person = flow.join(f"crowd-{i}")
            flow.consent(person)
            for n in range(10_000):
                state = flow.state(person)
                if state["phase"] != "item" or (i >= people - 4 and n > 30):
                    break
                shown = state["view"].get("context", "").split()
                words = next((p.split() for p in passages if p.split()[: len(shown)] == shown), None)
                if state["role"] == "catch":
                    answer = "orange"
                elif words and len(shown) < len(words) and n % 3:
                    answer = words[len(shown)]
                else:
                    answer = "the"
                flow.answer(person, state["seq"], state["step"], answer, client_ms=2500)
                clock[0] += 3 + (n * 7919 % 5)
    finally:
        flow.clock = time.time


def _next_token(driver: Any, study: Path, out: Path) -> None:
    flow = open_study(study, study.with_suffix(".sqlite"))
    with serving_in_thread(flow, TOKEN) as url:
        _consent(driver, url + "/?PROLIFIC_PID=screenshot-2")
        for guess in ("ferry", "the", "harbour"):
            _type(driver, guess)
        driver.find_element("id", "answer-input").send_keys("morning")
        _shot(driver, out, "next-token-game")
        while not _shown(driver, "complete"):
            driver.find_element("id", "answer-input").clear()
            _type(driver, "the")
        _shot(driver, out, "complete")


def _which_one(driver: Any, study: Path, out: Path) -> None:
    flow = open_study(study, study.with_suffix(".sqlite"))
    with serving_in_thread(flow, TOKEN) as url:
        _consent(driver, url + "/?PROLIFIC_PID=screenshot-3")
        _click(driver, 90)  # the practice round
        _click(driver, 70)
        while len({e.get_attribute("textContent") for e in driver.find_elements("css selector", "#pair .tok")}) < 2:
            _click(driver, 50)  # a round whose draw was the true token itself shows it twice: not this picture
        _shot(driver, out, "which-one-game")


def _turned_away(driver: Any, study: Path, out: Path) -> None:
    """One sentence, one place: while someone holds it, a newcomer is told to come back; once they finished it the
    study is full; and the one who finished it had fewer items than asked for (the study filled up early)."""
    flow = open_study(study, study.with_suffix(".sqlite"))
    with serving_in_thread(flow, TOKEN) as url:
        holder = flow.join("screenshot-holder")
        flow.consent(holder)
        driver.get(url + "/?PROLIFIC_PID=screenshot-4")
        _wait(driver, lambda d: _shown(d, "unavailable"))
        _shot(driver, out, "unavailable-held")
        while (state := flow.state(holder))["phase"] == "item":
            flow.answer(holder, state["seq"], state["step"], "tree")
        driver.refresh()
        _wait(driver, lambda d: _shown(d, "unavailable") and "full" in _text(d, "unavailable-title"))
        _shot(driver, out, "unavailable-full")
        driver.get(url + "/?PROLIFIC_PID=screenshot-holder")  # the holder's own page: finished early
        _wait(driver, lambda d: _shown(d, "complete"))
        _shot(driver, out, "complete-early")


if __name__ == "__main__":
    main()
