"""Screenshots of the `harness collect` participant pages and the admin page, for docs/collect.md.

Serves the example studies of ``examples/collect/`` (copied into a temporary folder, so no database is left beside
them) from this process, plays them in a headless Chromium as a participant would, and saves one PNG per page
under ``docs/collect/`` (1000x700 windows: small files). Needs the ``collect`` extra, selenium and Debian's
``chromium`` and ``chromium-driver`` (``scripts/setup.sh --browser``).

    .venv/bin/python scripts/collect_screenshots.py                 # the games on the packaged SmolLM2
    .venv/bin/python scripts/collect_screenshots.py --model mock:x  # the games on the mock model (seconds)
"""

from __future__ import annotations

import argparse
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

from harness.collect.prepare import open_study  # noqa: E402
from harness.collect.web import serving_in_thread  # noqa: E402
from tests.headless_chromium import start_chromium  # noqa: E402

EXAMPLES = REPO / "examples" / "collect"
TOKEN = "screenshot-admin-token"


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
            _passage_cloze(driver, _study(folder, "passage-cloze", None), args.out)
            _next_token(driver, _study(folder, "next-token-game", args.model), args.out)
            _which_one(driver, _study(folder, "which-one-game", args.model), args.out)
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            if errors:
                raise SystemExit(f"the browser logged errors: {errors}")
        finally:
            driver.quit()
    for png in sorted(args.out.glob("*.png")):
        print(f"{png.relative_to(REPO)}  {png.stat().st_size // 1024} KiB")


def _study(folder: Path, name: str, model: str | None) -> Path:
    """The example study copied into ``folder``, with another model for the games if asked."""
    text = (EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8")
    if model:
        text = re.sub(r"(?m)^model: .*$", f"model: {model}", text)
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _browser() -> Any:
    try:
        return start_chromium("1000,700", "--hide-scrollbars")
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
    if _shown(driver, "complete"):
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
        _shot(driver, out / "consent.png")
    driver.find_element("id", "consent-button").click()
    _wait(driver, lambda d: _shown(d, "instructions"))
    if out:
        _shot(driver, out / "instructions.png")
    driver.find_element("id", "start-button").click()
    _wait(driver, lambda d: _shown(d, "item"))


def _shot(driver: Any, path: Path) -> None:
    time.sleep(0.2)  # let the page settle (focus ring, fonts)
    driver.save_screenshot(str(path))


# ------------------------------------------------------------------------------------------------ the studies


def _passage_cloze(driver: Any, study: Path, out: Path) -> None:
    flow = open_study(study, study.with_suffix(".sqlite"))
    with serving_in_thread(flow, TOKEN) as url:
        _consent(driver, url + "/?PROLIFIC_PID=screenshot-1", out)
        guesses = iter(["sun", "was", "shining", "and", "the", "birds", "were", "singing", "in", "the", "trees"])
        while _shown(driver, "role"):  # the practice passage
            _type(driver, next(guesses, "word"))
        for word in ["morning", "the", "new", "boat", "left"]:
            _type(driver, word)
        driver.find_element("id", "answer-input").send_keys("harbour")
        _shot(driver, out / "passage-cloze.png")
        driver.get(f"{url}/admin?token={TOKEN}")
        _wait(driver, lambda d: d.find_elements("css selector", "main.admin"))
        _shot(driver, out / "admin.png")


def _next_token(driver: Any, study: Path, out: Path) -> None:
    flow = open_study(study, study.with_suffix(".sqlite"))
    with serving_in_thread(flow, TOKEN) as url:
        _consent(driver, url + "/?PROLIFIC_PID=screenshot-2")
        for guess in ("ferry", "the", "harbour"):
            _type(driver, guess)
        driver.find_element("id", "answer-input").send_keys("morning")
        _shot(driver, out / "next-token-game.png")
        while not _shown(driver, "complete"):
            driver.find_element("id", "answer-input").clear()
            _type(driver, "the")
        _shot(driver, out / "complete.png")


def _which_one(driver: Any, study: Path, out: Path) -> None:
    flow = open_study(study, study.with_suffix(".sqlite"))
    with serving_in_thread(flow, TOKEN) as url:
        _consent(driver, url + "/?PROLIFIC_PID=screenshot-3")
        _click(driver, 90)  # the practice round
        _click(driver, 70)
        while len({e.get_attribute("textContent") for e in driver.find_elements("css selector", "#pair .tok")}) < 2:
            _click(driver, 50)  # a round whose draw was the true token itself shows it twice: not this picture
        _shot(driver, out / "which-one-game.png")


if __name__ == "__main__":
    main()
