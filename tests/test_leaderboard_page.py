"""The leaderboard page in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by
selenium): it loads from disk with no console errors, its tables sort, its figures load, the instance view shows
people and models for a chosen context, and a screenshot of it is not blank.

The board is built from the mock model's runs (``saved_mock_runs``): the page's mechanics, not a model's numbers,
are under test. Slow (a browser is started); skipped where no Chromium is installed, except where
``scripts/setup.sh --browser`` installed it (the README's test command, and CI): see ``tests/headless_chromium.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.leaderboard import build
from tests.headless_chromium import chromium_or_skip

pytestmark = pytest.mark.slow

MODEL = "mock:test"


@pytest.fixture(scope="module")
def board_dir(saved_mock_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("board")
    slug = "mock__test"
    paths = [saved_mock_runs / "cloze" / slug, saved_mock_runs / "gen" / slug, saved_mock_runs / "human"]
    build(paths, out)
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium_or_skip("1400,1800") as driver:
        yield driver


def _column(driver: Any, table_id: str, heading: str) -> int:
    cells = driver.find_elements("css selector", f"#{table_id} thead th")
    headings = [th.get_attribute("textContent") for th in cells]
    return next(i for i, text in enumerate(headings) if text.startswith(heading))


def _values(driver: Any, table_id: str, column: int) -> list[str]:
    rows = driver.find_elements("css selector", f"#{table_id} tbody tr")
    return [row.find_elements("css selector", "td")[column].get_attribute("data-v") for row in rows]


def test_the_page_loads_sorts_shows_figures_and_instances(browser: Any, board_dir: Path, tmp_path: Path) -> None:
    browser.get((board_dir / "index.html").as_uri())
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    assert browser.title == f"Leaderboard: {board_dir.name}"

    # Sorting: the provo table by TVD, ascending then descending; empty cells last.
    table = browser.find_element("css selector", "section[data-task=provo] table.sortable").get_attribute("id")
    column = _column(browser, table, "tvd")
    header = browser.find_elements("css selector", f"#{table} thead th")[column]
    header.click()
    values = [float(v) for v in _values(browser, table, column) if v]
    assert values == sorted(values) and len(values) == 2  # the model and the human control
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert [float(v) for v in _values(browser, table, column) if v] == sorted(values, reverse=True)
    system = browser.find_elements("css selector", "#overview thead th")[0]
    system.click()
    system.click()
    assert _values(browser, "overview", 0) == [f"{MODEL} · top_p=0.9", f"{MODEL} · ancestral", "human"]

    # Every figure is present and decoded by the browser.
    images = browser.find_elements("css selector", "figure img")
    assert len(images) >= 4
    for image in images:
        browser.execute_script("arguments[0].scrollIntoView()", image)
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) > 0

    # The instance view: Provo's third context shows people and the model, at most 15 words each.
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "instance-task")).select_by_value("provo")
    Select(browser.find_element("id", "instance-item")).select_by_value("2")
    panels = browser.find_elements("css selector", "#instance-view .panel[data-system]")
    assert [p.get_attribute("data-system") for p in panels] == ["human", f"{MODEL} · ancestral"]
    for panel in panels:
        assert 1 <= len(panel.find_elements("css selector", ".bar")) <= 15
    Select(browser.find_element("id", "instance-task")).select_by_value("asset-test")
    panels = browser.find_elements("css selector", "#instance-view .panel[data-system]")
    assert len(panels) == 3 and len(panels[1].find_elements("css selector", "li")) == 4  # 4 samples per input
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []

    # The screenshot: a real rendering, not a blank page.
    browser.execute_script("window.scrollTo(0, 0)")
    shot = tmp_path / "leaderboard.png"
    assert browser.save_screenshot(str(shot))
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[1] == 1400
    ink = np.mean(pixels[..., :3] < 0.5)
    assert 0.01 < ink < 0.5, ink
