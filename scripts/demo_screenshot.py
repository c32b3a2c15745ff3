"""docs/demo.png: the demo page with the shipped readers, a news-like paragraph, its
entities and one plain question answered by three modes side by side.

    .venv/bin/python scripts/demo_screenshot.py [OUT.png]

Needs Debian's chromium and chromium-driver (as the browser test does); starts `cheapqa
serve` on a free loopback port with the embedded store in a temporary folder and stops it.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from bench.spawn import serve

# Written for this screenshot (invented events).
TEXT = (
    "Prime Minister Theresa May flew to Islamabad on Monday to meet President Pervez "
    "Musharraf. The two leaders discussed trade with officials of the World Bank and the "
    "United Nations. Musharraf said the talks had been useful, and May promised to return "
    "in the spring. Later the Foreign Secretary, Jack Straw, met the UN envoy Kofi Annan, "
    "who praised Musharraf for his patience. May left for London that evening."
)
QUESTION = "Who promised to return in the spring?"


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/demo.png")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"CHEAPQA_DATA_DIR": tmp, "CHEAPQA_STORE_URL": ""}
        with serve(env, Path(tmp) / "serve.log") as server:
            url = server.url
            options = webdriver.ChromeOptions()
            options.binary_location = "/usr/bin/chromium"
            for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
                options.add_argument(flag)
            options.add_argument("--window-size=1400,900")
            browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
            try:
                wait = WebDriverWait(browser, 120)
                browser.get(url + "/")
                wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "input[name=mode]")))
                browser.find_element(By.ID, "text").send_keys(TEXT)
                browser.find_element(By.ID, "doc-id").send_keys("islamabad")
                browser.find_element(By.ID, "index").click()
                wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "indexed —"))
                # linear and softmax are checked by default; gated too, for three columns
                gated = browser.find_element(By.CSS_SELECTOR, "input[name=mode][value=gated]")
                if not gated.is_selected():
                    gated.click()
                browser.find_element(By.ID, "question").send_keys(QUESTION)
                browser.find_element(By.ID, "ask").click()
                wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.answer")) >= 9)
                time.sleep(0.5)
                browser.save_screenshot(str(out))
            finally:
                browser.quit()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
