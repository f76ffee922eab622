"""The built-in viewer in a real browser: Debian's Chromium, headless, driven by Selenium through
Debian's chromedriver, against `jaxprof view --ui builtin` serving a real CPU capture (and a
synthetic two-host GPU run for flows and the host picker, a real TPU capture for the roofline's
roofs). Screenshots of every page go to $JAXPROF_ARTIFACTS (default: test-artifacts/ in the repository)."""
from __future__ import annotations

from collections import Counter

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import REAL_CAPTURES, JAXPROF_BIN, capture_steps, headless_chromium, run_jaxprof
from test_export import gpu_profile
from test_hosts import write_run
from test_view import free_port
from test_viewer_api import is_extra, two_run_logdir

ARTIFACTS = Path(os.environ.get("JAXPROF_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts")
REAL = REAL_CAPTURES  # real captures by others


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    return capture_steps(tmp_path_factory.mktemp("viewer_browser"))


def serve_dir(log_dir: Path) -> Iterator[str]:
    """Runs `jaxprof view log_dir --ui builtin` and yields its URL."""
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
def server(log_dir) -> Iterator[str]:
    yield from serve_dir(log_dir)


@pytest.fixture(scope="module")
def hosts_server(tmp_path_factory) -> Iterator[str]:
    """Two hosts, each a GPU profile whose three launches link to their kernels."""
    run = tmp_path_factory.mktemp("viewer_hosts") / "plugins" / "profile" / "two_hosts"
    run.mkdir(parents=True)
    for host in ("host-a", "host-b"):
        gpu_profile(run / f"{host}.xplane.pb")
    yield from serve_dir(run.parents[2])


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    yield from headless_chromium("1400,1000")


def report(log_dir: Path) -> dict:
    proc = run_jaxprof("report", log_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def shot(driver: webdriver.Chrome, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"viewer_{name}.png"))


def wait_for(driver: webdriver.Chrome, css: str, text: str | None = None):
    """The first element matching css (holding text), waiting for it; a page that re-renders while
    it is looked at (its old element gone stale) is looked at again."""
    def ready(d):
        found = d.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found and (text is None or text in found[0].text) else False
    return WebDriverWait(driver, 20, ignored_exceptions=[StaleElementReferenceException]).until(ready)


def test_overview_shows_steps_and_findings(server, browser, log_dir):
    expected = report(log_dir)
    browser.get(server + "#/overview")
    summary = wait_for(browser, "#step-summary")
    assert summary.text.startswith(f"{expected['step_summary']['count']} steps")
    bars = browser.find_elements(By.CSS_SELECTOR, "#step-chart g.step")
    assert len(bars) == expected["step_summary"]["count"]
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


# The Timeline's own tests (test_viewer_timeline.py) use these helpers too.
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


def test_memory_and_compare_pages_render(server, browser):
    browser.get(server + "#/memory")
    page = wait_for(browser, "#page")
    WebDriverWait(browser, 20).until(lambda d: "Loading" not in d.find_element(By.ID, "page").text)
    assert "allocations" in page.text or browser.find_elements(By.ID, "memory-chart")
    shot(browser, "memory")
    run = json.loads(browser.execute_script("return fetch('/api/runs').then((r) => r.text())"))[0]["id"]
    browser.get(server + f"#/compare?base={run}&new={run}")  # the user picks both runs
    delta = wait_for(browser, "#step-delta")
    assert "+0.0%" in delta.text  # one run compared with itself
    shot(browser, "compare")


def js(driver: webdriver.Chrome, expr: str):
    return driver.execute_script(f"return {expr}")


def test_overview_host_picker_filters_the_report(hosts_server, browser):
    browser.get(hosts_server + "#/overview")
    wait_for(browser, "#page h2", "two_hosts")
    assert "hosts host-a, host-b" in browser.find_element(By.ID, "page").text
    Select(wait_for(browser, "#host-pick")).select_by_value("host-a")
    WebDriverWait(browser, 20).until(lambda d: "hosts host-a ·" in d.find_element(By.ID, "page").text)
    assert [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#host-pick option")] == [
        "all hosts", "host-a", "host-b"]
    assert "host=host-a" in js(browser, "location.hash")
    shot(browser, "overview_host_a")


@pytest.fixture(scope="module")
def straggler_server(tmp_path_factory) -> Iterator[str]:
    """test_hosts' two-host run: b's clock 1 ms behind, b late in steps 3 and 4."""
    yield from serve_dir(write_run(tmp_path_factory.mktemp("viewer_straggler") / "plugins" / "profile" / "job").parents[2])


def test_overview_shows_hosts_side_by_side_with_the_straggler(straggler_server, browser):
    browser.get(straggler_server + "#/overview")
    wait_for(browser, "#hosts-table")
    assert wait_for(browser, "#clock-method").text.startswith("clocks aligned by ends of the last collective")
    hosts = table_rows(browser, "hosts-table")
    assert [r[:3] for r in hosts] == [["a", "reference", "0.0000"], ["b", "collective ends", "1.000"]]
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#host-steps th")]
    assert heads == ["step", "a ms", "b ms", "straggler"]
    steps = table_rows(browser, "host-steps")
    assert [r[0] for r in steps] == ["0", "1", "2", "3", "4", "5"]
    assert steps[3][3] == "b held the others 6.000 ms" and steps[2][3] == ""
    marked = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#host-steps td.straggler")]
    assert marked == ["10.000", "10.000"]  # b's cells in steps 3 and 4
    shot(browser, "overview_hosts")


# ---- flame: device time by Python call stack, and the source lines on the overview -------------------

def flame_nodes(driver: webdriver.Chrome) -> list[dict]:
    """The flame JSON of the run the page shows."""
    return json.loads(driver.execute_script(
        "return fetch(`/api/run/${encodeURIComponent(state.run)}/flame`).then((r) => r.text())"))["flame"]


def flame_box(driver: webdriver.Chrome, i: int) -> dict | None:
    """Node i's box: its left edge from the chart's inner edge and its width (px), classes and text."""
    return js(driver, f"""(() => {{
        const e = document.querySelector('#flame .fl-node[data-i="{i}"]'), f = document.getElementById('flame');
        if (!e) return null;
        const r = e.getBoundingClientRect();
        return {{ x: r.left - f.getBoundingClientRect().left - f.clientLeft, w: r.width, cls: e.className,
                  text: e.textContent }}; }})()""")


def test_flame_page_zooms_into_a_frame_and_searches(server, browser, log_dir):
    matmul = max((o for o in report(log_dir)["ops"] if o["category"] == "matmul"), key=lambda o: o["self_ms"])
    browser.get("about:blank")
    browser.get(server + "#/flame")
    wait_for(browser, "#flame .fl-node")
    nodes = flame_nodes(browser)
    full = js(browser, "document.getElementById('flame').clientWidth")
    assert nodes[0]["name"] == "all" and nodes[0]["parent"] == -1
    root = flame_box(browser, 0)
    assert root["text"].startswith("all") and root["x"] == pytest.approx(0, abs=1)
    assert root["w"] == pytest.approx(full, abs=1)

    # The matmul is a leaf under the frame of the line that made it, as wide as its share of the time.
    ops = [i for i, n in enumerate(nodes) if n["kind"] == "op" and n["name"] == matmul["name"]]
    assert sum(nodes[i]["total_ms"] for i in ops) == pytest.approx(matmul["self_ms"], rel=1e-3)
    op = max(ops, key=lambda i: nodes[i]["total_ms"])
    frame = nodes[op]["parent"]
    assert nodes[frame]["kind"] == "frame" and "conftest.py:" in nodes[frame]["name"]
    box, fbox = flame_box(browser, op), flame_box(browser, frame)
    assert box["w"] == pytest.approx(full * nodes[op]["total_ms"] / nodes[0]["total_ms"], abs=2)
    assert 2 < box["w"] < full - 2 and "fl-op" in box["cls"] and "fl-frame" in fbox["cls"]
    assert fbox["x"] - 1 <= box["x"] and box["x"] + box["w"] <= fbox["x"] + fbox["w"] + 1
    assert fbox["w"] == pytest.approx(full * nodes[frame]["total_ms"] / nodes[0]["total_ms"], abs=2)
    shot(browser, "flame")

    # Clicking the frame zooms to it: full width, its ancestors full-width rows above it, the root first.
    browser.find_element(By.CSS_SELECTOR, f'#flame .fl-node[data-i="{frame}"]').click()
    WebDriverWait(browser, 10).until(lambda d: flame_box(d, frame)["w"] > full - 2)
    assert flame_box(browser, frame)["x"] == pytest.approx(0, abs=1)
    ancestors, a = [], nodes[frame]["parent"]
    while a >= 0:
        ancestors.append(a)
        a = nodes[a]["parent"]
    crumbs = js(browser, "[...document.querySelectorAll('#flame .fl-crumb')].map((e) => +e.dataset.i)")
    assert sorted(crumbs) == sorted(ancestors) and 0 in crumbs
    root = flame_box(browser, 0)
    assert "fl-crumb" in root["cls"] and root["w"] == pytest.approx(full, abs=1) and root["text"].startswith("all")
    assert flame_box(browser, op)["w"] == pytest.approx(full * nodes[op]["total_ms"] / nodes[frame]["total_ms"], abs=2)
    assert browser.find_element(By.ID, "fl-status").text.startswith(f"zoomed to {nodes[frame]['name']}")
    assert f"focus={frame}" in js(browser, "location.hash")
    shot(browser, "flame_zoomed")
    # The zoom is in the URL: opening it again shows the same zoom.
    url = browser.current_url
    browser.get("about:blank")
    browser.get(url)
    wait_for(browser, "#flame .fl-crumb")
    assert flame_box(browser, frame)["w"] == pytest.approx(full, abs=1)

    # Clicking the root row zooms out to the whole tree.
    browser.find_element(By.CSS_SELECTOR, '#flame .fl-node[data-i="0"]').click()
    WebDriverWait(browser, 10).until(lambda d: flame_box(d, frame)["w"] < full - 2)
    assert not browser.find_elements(By.CSS_SELECTOR, "#flame .fl-crumb")
    assert "focus=" not in js(browser, "location.hash")

    # The search marks the op's boxes, dims the rest and says how much of the time they hold.
    browser.find_element(By.ID, "fl-search").send_keys(matmul["name"])
    WebDriverWait(browser, 10).until(lambda d: "fl-hit" in flame_box(d, op)["cls"])
    hits = js(browser, "[...document.querySelectorAll('#flame .fl-hit')].map((e) => +e.dataset.i)")
    assert sorted(hits) == [i for i, n in enumerate(nodes) if matmul["name"].lower() in n["name"].lower()]
    assert "fl-dim" in flame_box(browser, 0)["cls"] and "fl-dim" in flame_box(browser, frame)["cls"]
    share = 100 * sum(nodes[i]["total_ms"] for i in hits) / nodes[0]["total_ms"]
    assert browser.find_element(By.ID, "fl-match").text == (
        f"{len(hits)} match{'' if len(hits) == 1 else 'es'}, {share:.1f}% of all")
    shot(browser, "flame_search")


def test_overview_lists_the_top_source_lines(server, browser, log_dir):
    lines = report(log_dir)["lines"]
    assert lines and "conftest.py:" in lines[0]["source"]
    browser.get("about:blank")
    browser.get(server + "#/overview")
    wait_for(browser, "#lines-table")
    rows = table_rows(browser, "lines-table")
    assert [r[0] for r in rows] == [line["source"] for line in lines[:10]]
    assert rows[0][1] == lines[0]["function"] and rows[0][4] == lines[0]["ops"]
    assert rows[0][3] == f"{lines[0]['pct_device']:.1f}"
    shot(browser, "overview_lines")


# ---- compare: two real runs, the second with an extra named scope ------------------------------------

@pytest.fixture(scope="module")
def diff_dirs(tmp_path_factory) -> tuple[Path, Path, Path]:
    return two_run_logdir(tmp_path_factory.mktemp("viewer_browser_diff"))


@pytest.fixture(scope="module")
def diff_server(diff_dirs) -> Iterator[str]:
    yield from serve_dir(diff_dirs[0])


def table_rows(driver: webdriver.Chrome, table_id: str) -> list[list[str]]:
    """Each data row's cell texts."""
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tr")[1:]]


def test_compare_page_shows_the_diff(diff_server, diff_dirs, browser):
    _, base, new = diff_dirs
    proc = run_jaxprof("diff", base, new, "--json")
    assert proc.returncode == 0, proc.stderr
    want = json.loads(proc.stdout)
    browser.get("about:blank")
    browser.get(diff_server + "#/compare")
    ids = {r["name"]: r["id"] for r in json.loads(browser.execute_script(
        "return fetch('/api/runs').then((r) => r.text())"))}
    browser.get(diff_server + f"#/compare?base={ids['base']}&new={ids['new']}")  # nothing compared until both are picked
    line = wait_for(browser, "#step-delta", "→")
    assert Select(browser.find_element(By.ID, "cmp-base")).first_selected_option.text.endswith("base")
    assert Select(browser.find_element(By.ID, "cmp-new")).first_selected_option.text.endswith("new")
    s = want["steps"]
    assert f"{s['change_pct']:+.1f}%".replace("-", "−") in line.text
    verdict = browser.find_element(By.ID, "verdict")
    assert verdict.text.lower() == s["verdict"]
    # The extra scope is added, in the scope table and on its ops, each row with its change word.
    scopes = {r[7]: r[0] for r in table_rows(browser, "cmp-scopes")}
    extra = next(name for name in scopes if is_extra(name))
    assert scopes[extra] == "added"
    assert "change-slower" in browser.find_element(
        By.XPATH, f"//table[@id='cmp-scopes']//tr[td[8]='{extra}']/td[1]/span").get_attribute("class")
    ops = table_rows(browser, "cmp-ops")
    assert len(ops) == len(want["ops"])
    assert [r[0] for r in ops] == [o["change"] for o in want["ops"]]
    assert any(r[0] == "added" and is_extra(r[9]) for r in ops)
    breakdown = table_rows(browser, "cmp-breakdown")
    assert [r[0] for r in breakdown] == [p["part"] for p in want["breakdown"]]
    summary = table_rows(browser, "cmp-summary")
    assert summary[0] == ["ops"] + [str(want["summary"]["ops"][c]) for c in ("slower", "faster", "added", "removed", "unchanged")]
    shot(browser, "compare_diff")
    # The filter keeps the rows that name the extra scope.
    browser.find_element(By.ID, "cmp-filter").send_keys("extra")
    WebDriverWait(browser, 10).until(lambda d: all("extra" in r[9] or "extra" in r[7] for r in table_rows(d, "cmp-ops")))
    assert table_rows(browser, "cmp-ops")
    # Deep link, runs swapped: the extra scope was removed.
    browser.get("about:blank")
    browser.get(diff_server + f"#/compare?base={ids['new']}&new={ids['base']}")
    wait_for(browser, "#step-delta", "→")
    assert {r[7]: r[0] for r in table_rows(browser, "cmp-scopes")}[extra] == "removed"
    shot(browser, "compare_diff_swapped")


# ---- roofline: a real TPU capture with device peaks, and the CPU capture without ----------------------


@pytest.fixture(scope="module")
def tpu_server(tmp_path_factory) -> Iterator[str]:
    """The real v6e capture (peaks 918 TFLOP/s, 1638 GB/s in the profile) as a run of its own."""
    yield from serve_capture(tmp_path_factory, "jax_tpu_v6e_4core_inference")


def serve_capture(tmp_path_factory, name: str) -> Iterator[str]:
    """A viewer over one real capture, as the only run of a log directory."""
    run = tmp_path_factory.mktemp(f"viewer_{name}") / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    (run / "host.xplane.pb.gz").write_bytes((REAL / f"{name}.xplane.pb.gz").read_bytes())
    yield from serve_dir(run.parents[2])


@pytest.fixture(scope="module")
def gemm_server(tmp_path_factory) -> Iterator[str]:
    """The real MI300 GEMM capture: one module name (jit_dot) compiled into five programs."""
    yield from serve_capture(tmp_path_factory, "mi300_jax08_gemm")


def test_ops_page_names_the_program_of_each_row(gemm_server, browser):
    """A row per compiled program, as in the text table: rows of one name say their program."""
    browser.get("about:blank")
    browser.get(gemm_server + "#/ops")
    wait_for(browser, "#ops-table tr td")
    ops = ops_json(browser)["ops"]
    shown = [tr.find_element(By.CSS_SELECTOR, "td").text.replace("\n", " ")
             for tr in browser.find_elements(By.CSS_SELECTOR, "#ops-table tr")[1:]]
    rows_of = Counter((o["module"], o["name"]) for o in ops)  # a name in several rows says its program
    want = sorted(f"{o['name']} (program {o['program_id']})" if rows_of[o["module"], o["name"]] > 1 else o["name"]
                  for o in ops)
    assert sorted(s.replace("\u200b", "") for s in shown) == want
    assert sum(s.startswith("custom-call.1 (program ") for s in shown) == 5


def ops_json(driver: webdriver.Chrome) -> dict:
    """/api/run/<id>/ops of the run the page shows."""
    return json.loads(driver.execute_script(
        "return fetch(`/api/run/${encodeURIComponent(state.run)}/ops`).then((r) => r.text())"))


def roof_dots(driver: webdriver.Chrome) -> list[dict]:
    """Each dot's op row (data-op: the index the page linked it to), fill and tooltip."""
    return js(driver, """[...document.querySelectorAll('#roofline-chart circle.op')].map((c) => ({
        op: +c.dataset.op, fill: c.getAttribute('fill'), tip: c.querySelector('title').textContent }))""")


def chart_text(driver: webdriver.Chrome, name: str) -> str:
    """/api/run/<id>/chart/<name> of the run the page shows: the HTML fragment the library drew."""
    return driver.execute_script(
        f"return fetch(`/api/run/${{encodeURIComponent(state.run)}}/chart/{name}`).then((r) => r.text())")


def report_section(profile: Path, section: str, tmp: Path) -> str:
    """The body of one <section> of `jaxprof report --html` (after its <h2>), as written."""
    out = tmp / "report.html"
    proc = run_jaxprof("report", str(profile), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    start = html.index(f'<section id="{section}">')
    body = html[html.index("</h2>\n", start) + len("</h2>\n"):html.index("</section>", start)]
    return body


def report_chart(profile: Path, tmp: Path) -> str:
    """The roofline chart of `jaxprof report --html`: its section up to the end of the SVG (the
    tables and notes after it, top wasted time and precision, are the report's, not the chart's)."""
    body = report_section(profile, "roofline", tmp)
    end = body.index("</svg>") + len("</svg>")
    assert body[end:] == "" or body[end:].startswith(("<h3>Top wasted time", '<p id="precision">')), body[end:][:80]
    return body[:end] + ("\n" if body[end:end + 1] == "\n" else "")


def on_top(driver: webdriver.Chrome, el) -> bool:
    """Whether el is what a click at its centre hits (dots may overlap)."""
    return driver.execute_script("""const r = arguments[0].getBoundingClientRect();
        return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === arguments[0];""", el)


def test_roofline_places_the_tpu_ops_under_the_device_roofs(tpu_server, browser, tmp_path):
    """The viewer shows the chart the HTML report draws (one implementation, charts.c): the same
    bytes, under the device's roofs; each dot linked to its op's row."""
    browser.get("about:blank")
    browser.get(tpu_server + "#/roofline")
    wait_for(browser, "#roofline-chart circle.op")
    d = ops_json(browser)
    dev = next(v for v in d["devices"] if v["peak_tflops"] > 0 and v["peak_gbps"] > 0)
    assert (dev["peak_tflops"], round(dev["peak_gbps"])) == (918, 1638)
    ops = d["ops"]
    placed = sorted((i for i, o in enumerate(ops) if o["flops"] > 0 and o["bytes"] > 0),
                    key=lambda i: -ops[i]["self_ms"])[:50]
    assert placed and all(ops[i]["gflops_per_s"] > 0 for i in placed)
    capture = REAL / "jax_tpu_v6e_4core_inference.xplane.pb.gz"
    served = chart_text(browser, "roofline")
    assert served == report_chart(capture, tmp_path)  # byte for byte the report's
    note = browser.find_element(By.CSS_SELECTOR, "#rf-chart p").text
    assert note.startswith(f"Roofs of {dev['name']}: 918 TFLOP/s, 1638 GB/s (device); ridge at 560 FLOP/byte.")
    assert f"{len(placed)} ops with FLOP and byte counts" in note
    assert [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#roofline-chart text")
            if "peak" in t.text or "GB/s" in t.text] == ["peak 918 TFLOP/s", "1638 GB/s"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#roofline-chart polyline.roof")) == 1

    # One dot per op with FLOP and byte counts (the top 50 by self time), linked to its op's row.
    dots = roof_dots(browser)
    assert served.count('<circle class="op"') == len(dots)
    assert sorted(dot["op"] for dot in dots) == sorted(placed)
    for dot in dots:
        o = ops[dot["op"]]
        assert o["bound_by"] == "memory" and dot["fill"] == "#4e79a7"
        assert dot["tip"].startswith(o["name"] + ": ")
        assert f"at {o['roof_pct']:.1f}% of its roof" in dot["tip"]
    shot(browser, "roofline_tpu")

    # Clicking a dot (the one on top where it is drawn) shows that op's details and rings the dot.
    assert browser.find_element(By.ID, "rf-detail").text.startswith("Click a dot")
    clicked = 0
    for dot in dots:
        el = browser.find_element(By.CSS_SELECTOR, f'#roofline-chart circle.op[data-op="{dot["op"]}"]')
        if not on_top(browser, el):
            continue
        o = ops[dot["op"]]
        el.click()
        lines = wait_for(browser, "#rf-detail", o["name"]).text.split("\n")
        assert lines[0] == f"op {o['name']}" and f"category {o['category']}" in lines
        assert f"source {o['source']}" in lines and f"FLOPs {int(o['flops']):,}" in lines
        assert "bound by memory bound" in lines and f"roof {o['roof_pct']:.3g}%" in lines
        assert "rf-picked" in el.get_attribute("class")
        clicked += 1
    assert clicked >= 2
    shot(browser, "roofline_tpu_picked")

    # The table: the ten ops with the most self time, placed or not, with their bound and roof share.
    top = sorted(ops, key=lambda o: -o["self_ms"])[:10]
    rows = table_rows(browser, "rf-top")
    assert [r[0] for r in rows] == [o["name"] for o in top]
    assert [r[6] for r in rows] == [o["bound_by"] or "unknown" for o in top]  # async copies: unplaced
    assert [r[7] == "—" for r in rows] == [not o["bound_by"] for o in top]
    assert [float(r[7].replace(",", "")) for r in rows if r[7] != "—"] == [
        pytest.approx(o["roof_pct"], rel=6e-3) for o in top if o["bound_by"]]


def test_roofline_without_peaks_draws_dots_only(server, browser, log_dir, tmp_path):
    browser.get("about:blank")
    browser.get(server + "#/roofline")
    wait_for(browser, "#roofline-chart circle.op")
    d = ops_json(browser)
    assert not any(v["peak_tflops"] > 0 and v["peak_gbps"] > 0 for v in d["devices"]), "the CPU capture has no peaks"
    assert chart_text(browser, "roofline") == report_chart(log_dir, tmp_path)
    assert browser.find_element(By.CSS_SELECTOR, "#rf-chart p").text.startswith(
        "No device peaks known (pass --peak-tflops/--peak-gbps): the ops without roofs.")
    assert not browser.find_elements(By.CSS_SELECTOR, "#roofline-chart polyline.roof")
    dots = roof_dots(browser)
    assert len(dots) == min(50, len([o for o in d["ops"] if o["flops"] > 0 and o["bytes"] > 0])) > 0
    assert all(dot["fill"] == "#888888" and dot["tip"].endswith(", bound unknown") for dot in dots)
    assert all(d["ops"][dot["op"]]["name"] == dot["tip"].split(": ")[0] for dot in dots)
    shot(browser, "roofline_cpu")
