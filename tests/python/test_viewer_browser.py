"""The built-in viewer in a real browser: Debian's Chromium, headless, driven by Selenium through
Debian's chromedriver, against `jaxprof view --ui builtin` serving a real CPU capture. Screenshots
of every page go to $JAXPROF_ARTIFACTS (default: test-artifacts/ in the repository)."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import JAXPROF_BIN, capture_steps, run_jaxprof
from test_view import free_port

ARTIFACTS = Path(os.environ.get("JAXPROF_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts")


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    return capture_steps(tmp_path_factory.mktemp("viewer_browser"))


@pytest.fixture(scope="module")
def server(log_dir) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([str(JAXPROF_BIN), "view", str(log_dir), "--ui", "builtin", "--port", str(port),
                             "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = None
        for line in proc.stdout:
            m = re.search(r"http://127\.0\.0\.1:\d+/", line)
            if m:
                url = m.group(0)
                break
        assert url, "jaxprof view printed no URL"
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def report(log_dir: Path) -> dict:
    proc = run_jaxprof("report", log_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def shot(driver: webdriver.Chrome, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"viewer_{name}.png"))


def wait_for(driver: webdriver.Chrome, css: str, text: str | None = None):
    def ready(d):
        found = d.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found and (text is None or text in found[0].text) else False
    return WebDriverWait(driver, 20).until(ready)


def test_overview_shows_steps_and_findings(server, browser, log_dir):
    expected = report(log_dir)
    browser.get(server + "#/overview")
    summary = wait_for(browser, "#step-summary")
    assert summary.text.startswith(f"{expected['step_summary']['count']} steps")
    bars = browser.find_elements(By.CSS_SELECTOR, "#step-chart rect")
    assert len(bars) >= expected["step_summary"]["count"]
    findings = wait_for(browser, "#findings").text
    if expected["findings"]:
        assert expected["findings"][0]["title"] in findings
    else:
        assert "No findings" in findings
    shot(browser, "overview")


def test_ops_table_lists_the_top_op_first(server, browser, log_dir):
    top = max(report(log_dir)["ops"], key=lambda o: o["self_ms"])
    browser.get(server + "#/ops")
    table = wait_for(browser, "#ops-table", top["name"])
    first_row = table.find_elements(By.CSS_SELECTOR, "tr")[1]
    assert first_row.find_elements(By.CSS_SELECTOR, "td")[0].text == top["name"]
    filt = browser.find_element(By.ID, "op-filter")
    filt.send_keys("no-such-op-zzz")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#ops-table tr")) == 1  # header only
    shot(browser, "ops")


def canvas_ink(driver: webdriver.Chrome) -> int:
    """Non-white pixels on the timeline canvas."""
    return driver.execute_script("""
        const c = document.getElementById('timeline'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250)) n++;
        return n;""")


def window_of(driver: webdriver.Chrome) -> tuple[float, float]:
    h = driver.execute_script("return location.hash")
    m = re.search(r"start=([\d.e-]+)&end=([\d.e-]+)", h)
    return (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)


def test_timeline_draws_and_zoom_changes_the_window(server, browser):
    browser.get(server + "#/timeline")
    wait_for(browser, "#tl-status", "events")
    assert canvas_ink(browser) > 500
    browser.find_element(By.TAG_NAME, "body").send_keys("w")
    WebDriverWait(browser, 10).until(lambda d: window_of(d) != (0.0, 0.0))
    start, end = window_of(browser)
    browser.find_element(By.TAG_NAME, "body").send_keys("w")
    WebDriverWait(browser, 10).until(lambda d: window_of(d)[1] - window_of(d)[0] < end - start)
    shot(browser, "timeline")
    # The window is deep-linkable: opening the URL again shows the same window.
    zoomed, url = window_of(browser), browser.current_url
    browser.get("about:blank")
    browser.get(url)
    wait_for(browser, "#tl-status", "events")
    assert window_of(browser) == zoomed
    assert canvas_ink(browser) > 0

    # Clicking an event shows its stats, fetched from /api/run/<id>/event.
    browser.get(server + "#/timeline")
    wait_for(browser, "#tl-status", "events")
    browser.execute_script("showEvent(TL.hits.find((h) => h.e[2] >= 0 && h.name.startsWith('ThunkExecutor')))")
    info = wait_for(browser, "#event-info", "run_id: ")
    assert info.text.startswith("ThunkExecutor")


def test_memory_and_compare_pages_render(server, browser):
    browser.get(server + "#/memory")
    page = wait_for(browser, "#page")
    WebDriverWait(browser, 20).until(lambda d: "Loading" not in d.find_element(By.ID, "page").text)
    assert "allocations" in page.text or browser.find_elements(By.ID, "memory-chart")
    shot(browser, "memory")
    browser.get(server + "#/compare")
    delta = wait_for(browser, "#step-delta")
    assert "+0.0%" in delta.text  # one run compared with itself
    shot(browser, "compare")
