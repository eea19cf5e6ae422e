"""The system's headless Chromium (Debian's ``chromium`` and ``chromium-driver``), driven by selenium: one place that
starts it for the page tests (the leaderboard page, the collect study pages) and the screenshot script.

Why one place: whether a missing browser skips a test or fails it must be decided the same way everywhere. It fails
where it was asked for: ``scripts/setup.sh --browser`` (the README's test command, and so CI) leaves a stamp in the
virtual environment, and ``HARNESS_REQUIRE_BROWSER=1`` does the same by hand."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
MISSING = "chromium and chromedriver are not installed (scripts/setup.sh --browser installs them)"
#: Written by ``scripts/setup.sh --browser`` into the virtual environment of the run that installed the browser.
SETUP_STAMP = Path(sys.prefix) / ".browser"


def start_chromium(window: str, *extra_args: str) -> Any:
    """A headless Chromium of ``window`` size (``"1000,700"``) that keeps the page's console log; raises
    ``RuntimeError`` when no Chromium is installed."""
    if not (CHROMIUM and CHROMEDRIVER):
        raise RuntimeError(MISSING)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={window}", *extra_args):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@contextmanager
def chromium_or_skip(window: str) -> Iterator[Any]:
    """``start_chromium`` for a test: skipped without a browser, failed instead where one was asked for
    (``scripts/setup.sh --browser``'s stamp, or ``HARNESS_REQUIRE_BROWSER=1``)."""
    import pytest

    if not (CHROMIUM and CHROMEDRIVER):
        if os.environ.get("HARNESS_REQUIRE_BROWSER") == "1":
            pytest.fail(f"HARNESS_REQUIRE_BROWSER=1 but {MISSING}")
        if SETUP_STAMP.exists():
            pytest.fail(f"scripts/setup.sh --browser was run ({SETUP_STAMP}) but {MISSING}")
        pytest.skip(MISSING)
    pytest.importorskip("selenium.webdriver")
    driver = start_chromium(window)
    try:
        yield driver
    finally:
        driver.quit()
