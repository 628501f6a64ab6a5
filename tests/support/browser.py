"""Headless Chromium for the browser tests (selenium; Debian: ``apt-get install -y chromium chromium-driver``,
``pip install -e '.[bench]'``).  :func:`headless_chromium` skips the calling test, saying what is missing, when
the browser, its driver or selenium is not installed."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

# No name resolves except 127.0.0.1's: the page gets nothing from a CDN even on a machine with internet.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


def _find(env: str, *names: str) -> str | None:
    configured = os.environ.get(env)
    if configured and Path(configured).exists():
        return configured
    return next((found for name in names if (found := shutil.which(name))), None)


def headless_chromium(*, offline: bool = True):
    """A selenium Chrome driver on headless Chromium (``offline``: no host names resolve); the caller quits it."""
    try:
        from selenium import webdriver  # local import: a bench extra, absent from the test install
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[bench]')")
    binary = _find("CHROMIUM_BINARY", "chromium", "chromium-browser", "google-chrome")
    driver = _find("CHROMEDRIVER", "chromedriver")
    if not binary or not driver:
        pytest.skip("Chromium or chromedriver is not installed (Debian: apt-get install -y chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", *([OFFLINE] if offline else [])):
        opts.add_argument(arg)
    return webdriver.Chrome(options=opts, service=Service(driver))


def wait_until(predicate, timeout: float = 60.0, step: float = 0.2):
    """The first truthy value of ``predicate()`` within ``timeout`` seconds (exceptions count as not yet), else
    ``None``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception:  # the page is still changing: look again
            value = None
        if value:
            return value
        time.sleep(step)
    return None
