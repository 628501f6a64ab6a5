"""Headless Chromium for the browser tests: selenium (in the ``test`` extra) driving the system's Chromium through
the system's chromedriver (Debian: ``apt-get install -y chromium chromium-driver``).

:func:`headless_chromium` skips the calling test, saying what is missing, when the browser, its driver or selenium
is not installed (``CLAUSEGATE_BROWSER_TESTS=required``: fails instead, for a CI machine that has them).  It never
lets selenium fetch a driver: the chromedriver path is given explicitly, and Selenium Manager (which would download
one) is pointed at a path that does not exist (``SE_MANAGER_PATH``), so any attempt to use it fails loudly."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.waiting import poll

# No name resolves except 127.0.0.1's: the page gets nothing from a CDN even on a machine with internet.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
INSTALL = "Debian: apt-get install -y chromium chromium-driver; pip install -e '.[test]'"
NO_SELENIUM_MANAGER = "/nonexistent/selenium-manager (ClauseGate's tests never download a driver)"


def _find(env: str, *names: str) -> str | None:
    """``$env`` when it names a file, else the first of ``names`` on PATH."""
    configured = os.environ.get(env)
    if configured:
        return configured if Path(configured).is_file() else None
    return next((found for name in names if (found := shutil.which(name))), None)


def _missing(what: str) -> None:
    reason = f"{what} ({INSTALL})"
    if os.environ.get("CLAUSEGATE_BROWSER_TESTS") == "required":
        pytest.fail(f"CLAUSEGATE_BROWSER_TESTS=required but {reason}", pytrace=False)
    pytest.skip(reason)


def headless_chromium(*, offline: bool = True, size: tuple[int, int] = (1400, 1000)):
    """A selenium Chrome driver on headless Chromium (``offline``: no host names resolve); the caller quits it."""
    try:
        from selenium import webdriver  # local import: the tests that need no browser never import selenium
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed")
    binary = _find("CHROMIUM_BINARY", "chromium", "chromium-browser", "google-chrome")
    driver = _find("CHROMEDRIVER", "chromedriver")
    if not binary or not driver:
        missing = " and ".join(name for name, path in (("Chromium", binary), ("chromedriver", driver)) if not path)
        _missing(f"{missing} not found (CHROMIUM_BINARY / CHROMEDRIVER, else PATH)")
    os.environ["SE_MANAGER_PATH"] = NO_SELENIUM_MANAGER  # never download a driver or a browser
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={size[0]},{size[1]}", *([OFFLINE] if offline else [])):
        opts.add_argument(arg)
    return webdriver.Chrome(options=opts, service=Service(executable_path=driver))


def wait_until(predicate, timeout: float = 60.0, step: float = 0.2):
    """The first truthy value of ``predicate()`` within ``timeout`` seconds (exceptions count as not yet), else
    ``None`` (:func:`tests.support.waiting.poll`)."""
    return poll(predicate, timeout, step)
