"""The gateway's API docs (`/docs`: Swagger UI, `/redoc`) work with no network: their JavaScript, CSS and icon come
from the gateway itself (clausegate/gateway/app.py), never from a CDN.  Over real HTTP (uvicorn in a thread); the
browser test renders both pages in headless Chromium where no host name resolves."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx
import pytest

from clausegate.gateway import GatewayConfig, create_app
from tests.support.browser import headless_chromium, wait_until
from tests.support.gates import GatewayThread

PAGES = ("/docs", "/redoc")


class Assets(HTMLParser):
    """Every URL a page loads: script src, link href, img src."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        wanted = {"script": "src", "link": "href", "img": "src"}.get(tag)
        self.urls += [value for name, value in attrs if name == wanted and value]


@pytest.fixture(scope="module")
def gateway():
    with GatewayThread(create_app(GatewayConfig())) as server:
        yield server


@pytest.mark.parametrize("page", PAGES)
def test_docs_pages_load_only_assets_the_gateway_serves(gateway, page):
    html = httpx.get(gateway.url + page, timeout=30)
    assert html.status_code == 200 and "text/html" in html.headers["content-type"]
    parser = Assets()
    parser.feed(html.text)
    assert parser.urls, html.text
    assert not re.search(r"https?://", html.text), "the page names another host"
    kinds = set()
    for url in parser.urls:
        assert url.startswith("/"), f"{page} loads {url} from elsewhere"
        asset = httpx.get(gateway.url + url, timeout=30)
        assert asset.status_code == 200 and len(asset.content) > 1000, (url, asset.status_code)
        kinds.add(asset.headers["content-type"].split(";")[0])
    assert {"text/javascript"} <= kinds or {"application/javascript"} <= kinds, kinds
    if page == "/docs":
        assert "text/css" in kinds, kinds
    assert httpx.get(gateway.url + "/openapi.json", timeout=30).json()["info"]["title"] == "ClauseGate gateway"


@pytest.mark.slow
def test_docs_render_in_a_browser_without_network(gateway):
    driver = headless_chromium(offline=True)
    try:
        driver.get(gateway.url + "/docs")
        operations = wait_until(lambda: driver.find_elements("css selector", "#swagger-ui .opblock"), timeout=60)
        assert operations, driver.page_source[:2000]
        title = driver.find_element("css selector", "#swagger-ui .info .title").text
        assert "ClauseGate gateway" in title
        assert any("/inbox/tasks" in op.text for op in operations)

        driver.get(gateway.url + "/redoc")
        heading = wait_until(lambda: [h for h in driver.find_elements("css selector", "redoc h1, .api-content h1")
                                      if "ClauseGate gateway" in h.text], timeout=60)
        assert heading, driver.page_source[:2000]
    finally:
        driver.quit()
