"""The demo page in a real browser (Debian's chromium, headless, through chromium-driver and
Selenium): index a document through the page, wait for "indexed", ask a question, and see
answer rows for two modes side by side. Skipped without chromium, except under CI=true."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import IN_CI
from tests.service.texts import DOCUMENTS, QUESTIONS

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Where to write a screenshot of the page with answers (docs/demo.png is made this way).
SCREENSHOT = os.environ.get("CHEAPQA_DEMO_SCREENSHOT")


@pytest.fixture
def browser() -> Iterator[Any]:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        reason = f"no {', '.join(missing)}: apt-get install -y chromium chromium-driver"
        if IN_CI:
            pytest.fail(f"CI=true: {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_needs_no_key_and_ships_no_outside_references(live_server_url: str) -> None:
    page = httpx.get(live_server_url + "/", trust_env=False)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for asset in ("/static/demo.js", "/static/demo.css"):
        assert httpx.get(live_server_url + asset, trust_env=False).status_code == 200
    bodies = page.text + httpx.get(live_server_url + "/static/demo.js", trust_env=False).text
    assert "http://" not in bodies and "https://" not in bodies  # nothing fetched from outside


def test_index_and_ask_through_the_page(browser: Any, live_server_url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(live_server_url + "/")
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "input[name=mode]")))
    browser.find_element(By.ID, "text").send_keys(DOCUMENTS["harbour"])
    browser.find_element(By.ID, "doc-id").send_keys("page-harbour")
    browser.find_element(By.ID, "index").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "indexed —"))
    assert "tokens" in browser.find_element(By.ID, "status").text
    # The entities panel answers (a list, or "not available" on a server without the route).
    wait.until(lambda d: d.find_element(By.ID, "entities").text not in ("", "—"))

    checked = [
        b.get_attribute("value")
        for b in browser.find_elements(By.CSS_SELECTOR, "input[name=mode]:checked")
    ]
    assert checked == ["linear", "softmax"]
    browser.find_element(By.ID, "question").send_keys(QUESTIONS["harbour"][0])
    browser.find_element(By.ID, "ask").click()
    for mode in checked:
        rows = wait.until(
            lambda d, m=mode: d.find_elements(By.CSS_SELECTOR, f".mode[data-mode={m}] tr.answer")
        )
        assert len(rows) == 3
        names = [r.find_elements(By.TAG_NAME, "td")[0].text for r in rows]
        assert all(name in DOCUMENTS["harbour"] for name in names)
        meta = browser.find_element(By.CSS_SELECTOR, f".mode[data-mode={mode}] .meta").text
        assert "ms round trip" in meta and "server" in meta and "B stored" in meta
    assert browser.find_element(By.ID, "error").text == ""
    if SCREENSHOT:
        browser.save_screenshot(SCREENSHOT)


def test_errors_show_the_envelope_message(browser: Any, live_server_url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(live_server_url + "/")
    browser.find_element(By.ID, "text").send_keys("Some text.")
    browser.find_element(By.ID, "doc-id").send_keys("not a valid id!")
    browser.find_element(By.ID, "index").click()
    error = WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "error").text or None)
    assert error.startswith("Error: request validation failed")
