"""The viewer's Overview step chart and step view, the Ops table's sort/columns/URL, the Compare page's
run picking and width, the Memory page on CPU: in a real headless Chromium (Debian's, through
Selenium) against `jaxprof view` serving real JAX CPU captures, with the step window API
(`/api/run/<id>/<section>?steps=A:B`) checked against the CLI. Screenshots at 1400x900 go to
$JAXPROF_ARTIFACTS (default: test-artifacts/ in the repository)."""
from __future__ import annotations

import json
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import capture_steps, headless_chromium, jaxprof_json, run_jaxprof
from test_viewer_browser import ARTIFACTS, serve_dir, table_rows, wait_for
from test_viewer_api import two_run_logdir

N_STEPS = 6


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    return capture_steps(tmp_path_factory.mktemp("viewer_pages"), start_step=0, num_steps=N_STEPS, total=N_STEPS)


@pytest.fixture(scope="module")
def server(log_dir) -> Iterator[str]:
    yield from serve_dir(log_dir)


@pytest.fixture(scope="module")
def diff_dirs(tmp_path_factory) -> tuple[Path, Path, Path]:
    return two_run_logdir(tmp_path_factory.mktemp("viewer_pages_diff"))


@pytest.fixture(scope="module")
def diff_server(diff_dirs) -> Iterator[str]:
    yield from serve_dir(diff_dirs[0])


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    yield from headless_chromium("1400,900", page=(1400, 900))


def shot(driver: webdriver.Chrome, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"pages_{name}.png"))


def js(driver: webdriver.Chrome, expr: str):
    return driver.execute_script(f"return {expr}")


def fetch_json(driver: webdriver.Chrome, path: str):
    return json.loads(driver.execute_async_script(
        "const done = arguments[arguments.length - 1]; fetch(arguments[0]).then((r) => r.text()).then(done);", path))


def fmt_ms(v: float) -> str:
    """The viewer's ms(): 1 decimal from 100, 3 from 1, else 4."""
    return f"{v:.1f}" if v >= 100 else f"{v:.3f}" if v >= 1 else f"{v:.4f}"


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def fresh(driver: webdriver.Chrome, url: str) -> None:
    """Loads url as a new page (a mere hash change would keep the old page's elements a moment)."""
    driver.get("about:blank")
    driver.get(url)


# ---- the step window API -------------------------------------------------------------------------

def test_api_step_window_matches_the_cli(server, log_dir):
    runs = get(server + "api/runs")[1]
    run = runs[0]["id"]
    for section in ("ops", "steps", "scopes", "overview"):
        status, doc = get(f"{server}api/run/{run}/{section}?steps=2:3")
        assert status == 200, doc
        cli = jaxprof_json("report" if section == "overview" else section, log_dir, "--steps", "2:3")
        key = {"ops": "ops", "steps": "steps", "scopes": "scopes", "overview": "steps"}[section]
        assert doc[key] == cli[key]
    status, doc = get(f"{server}api/run/{run}/ops?steps=99")
    assert status == 404 and doc["error"] == f"no step numbered 99 (steps are 0-{N_STEPS - 1})"
    status, doc = get(f"{server}api/run/{run}/ops?steps=3:x")
    assert status == 400 and "bad step range" in doc["error"]
    status, doc = get(f"{server}api/run/{run}/kernels?steps=1")
    assert status == 400 and "no ?steps=" in doc["error"]
    # The whole run is still the whole run after a window was asked for (separate cache slots).
    assert len(get(f"{server}api/run/{run}/steps")[1]["steps"]) == N_STEPS


# ---- Overview: the step chart and the step view --------------------------------------------------

def test_step_chart_is_the_reports_and_a_click_opens_the_step_view(server, browser, log_dir, tmp_path):
    """The overview's step chart is the one the HTML report draws (charts.c, served by the chart
    endpoint): hovering a bar repeats its title, clicking it opens that step."""
    full = jaxprof_json("steps", log_dir)["steps"]
    fresh(browser, server + "#/overview")
    wait_for(browser, "#step-summary")
    out = tmp_path / "report.html"
    assert run_jaxprof("report", str(log_dir), "--html", str(out)).returncode == 0
    html = out.read_text()
    served = browser.execute_script(
        "return fetch(`/api/run/${encodeURIComponent(state.run)}/chart/steps`).then((r) => r.text())")
    assert served.startswith('<p class="legend">') and served.endswith("</svg>\n")
    assert served in html[html.index('<section id="steps">'):html.index('<section id="breakdown">')]
    bars = {b.get_attribute("data-step"): b for b in browser.find_elements(By.CSS_SELECTOR, "#step-chart g.step")}
    assert list(bars) == [str(s["step"]) for s in full]
    ActionChains(browser).move_to_element(bars["3"]).perform()
    hover = wait_for(browser, "#step-hover", "step 3:").text
    assert hover == bars["3"].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    shot(browser, "overview")
    # KPIs this CPU profile cannot know say so instead of showing 0.
    kpis = {r[0]: r[1] for r in table_rows(browser, "kpis")}
    assert kpis["memory bandwidth"] == "n/a"

    bars["3"].click()
    wait_for(browser, "#step-title", "Step 3")
    assert "step=3" in js(browser, "location.hash")
    api = fetch_json(browser, f"/api/run/{js(browser, 'state.run')}/ops?steps=3:3")
    cli = jaxprof_json("ops", log_dir, "--steps", "3:3")["ops"]
    assert api["ops"] == cli
    rows = table_rows(browser, "step-ops")
    want = sorted(api["ops"], key=lambda o: -o["self_ms"])
    assert [(r[0], r[2], r[3], r[4]) for r in rows] == [
        (o["name"], str(o["count"]), fmt_ms(o["self_ms"]), fmt_ms(o["total_ms"])) for o in want]
    facts = browser.find_element(By.ID, "step-facts").text
    assert facts.startswith(f"{fmt_ms(full[3]['duration_ms'])} ms, from {fmt_ms(full[3]['start_ms'])}")
    assert f"{full[3]['ops']} op occurrences" in facts
    issued = full[3]["issued_start_ms"]  # when its marker issued it, beside the device-ended span
    assert f"issued by the host from {fmt_ms(issued)} to {fmt_ms(issued + full[3]['issued_ms'])} ms" in facts
    assert "no device work" not in facts
    parts = {p: full[3][f"{p}_ms"] for p in ("compute", "collective", "h2d", "d2h", "d2d", "compile", "host", "idle")}
    cells = table_rows(browser, "step-breakdown")[0]
    assert [c.split()[0] for c in cells] == [fmt_ms(v) for v in parts.values() if v > 0]
    scopes = fetch_json(browser, f"/api/run/{js(browser, 'state.run')}/scopes?steps=3:3")["scopes"]
    device = [s for s in scopes if s["kind"] == "device"][:10]
    assert [r[0] for r in table_rows(browser, "step-scopes")] == [s["scope"] for s in device]
    shot(browser, "step_view")

    # Next step, then the Timeline on this step's window.
    browser.find_element(By.XPATH, "//button[contains(., 'step 4')]").click()
    wait_for(browser, "#step-title", "Step 4")
    link = browser.find_element(By.ID, "step-timeline")
    href = link.get_attribute("href")
    start, end = full[4]["start_ms"], full[4]["start_ms"] + full[4]["duration_ms"]
    assert float(re.search(r"start_us=([\d.]+)", href).group(1)) == pytest.approx(start * 1000, abs=1e-3)
    assert float(re.search(r"end_us=([\d.]+)", href).group(1)) == pytest.approx(end * 1000, abs=1e-3)
    link.click()
    wait_for(browser, "#tl-status", "events")
    assert js(browser, "state.page") == "timeline"
    # The Timeline opened on the step: its window is the step's.
    assert js(browser, "TL.start") == pytest.approx(start, abs=1e-6)
    assert js(browser, "TL.end") == pytest.approx(end, abs=1e-6)
    shot(browser, "step_timeline")


# ---- Ops: sort toggle, URL, columns, n/a ---------------------------------------------------------

def ops_column(driver: webdriver.Chrome, heading: str) -> list[str]:
    heads = [th.text.rstrip(" ▴▾") for th in driver.find_elements(By.CSS_SELECTOR, "#ops-table th")]
    k = heads.index(heading)
    return [r[k] for r in table_rows(driver, "ops-table")]


def test_ops_sort_toggles_and_lives_in_the_url(server, browser, log_dir):
    ops = jaxprof_json("ops", log_dir)["ops"]
    fresh(browser, server + "#/ops")
    wait_for(browser, "#ops-table td")
    # Default: self time, largest first.
    assert ops_column(browser, "op") == [o["name"] for o in sorted(ops, key=lambda o: -o["self_ms"])]
    browser.find_element(By.CSS_SELECTOR, "#ops-table th[data-key='total_ms']").click()
    WebDriverWait(browser, 10).until(lambda d: "sort=total_ms" in js(d, "location.hash"))
    assert "dir=desc" in js(browser, "location.hash")
    by_total = [o["name"] for o in sorted(ops, key=lambda o: -o["total_ms"])]
    assert ops_column(browser, "op") == by_total
    browser.find_element(By.CSS_SELECTOR, "#ops-table th[data-key='total_ms']").click()
    WebDriverWait(browser, 10).until(lambda d: "dir=asc" in js(d, "location.hash"))
    assert ops_column(browser, "op") == by_total[::-1]
    # Names sort A to Z first.
    browser.find_element(By.CSS_SELECTOR, "#ops-table th[data-key='name']").click()
    WebDriverWait(browser, 10).until(lambda d: "sort=name" in js(d, "location.hash"))
    assert "dir=asc" in js(browser, "location.hash")
    assert ops_column(browser, "op") == sorted(o["name"] for o in ops)
    browser.find_element(By.CSS_SELECTOR, "#ops-table th[data-key='total_ms']").click()
    browser.find_element(By.CSS_SELECTOR, "#ops-table th[data-key='total_ms']").click()
    WebDriverWait(browser, 10).until(lambda d: "sort=total_ms&dir=asc" in js(d, "location.hash"))
    # The filter goes into the URL too, and a reload keeps sort, direction and filter.
    browser.find_element(By.ID, "op-filter").send_keys("fusion")
    WebDriverWait(browser, 10).until(lambda d: "filter=fusion" in js(d, "location.hash"))
    url = browser.current_url
    fresh(browser, url)
    wait_for(browser, "#ops-table td")
    assert browser.find_element(By.ID, "op-filter").get_attribute("value") == "fusion"
    fused = [o for o in ops if re.search("fusion", f"{o['name']} {o['category']} {o['module']} {o['scope']} {o['op_name']} {o['source']}", re.I)]
    assert ops_column(browser, "op") == [o["name"] for o in sorted(fused, key=lambda o: o["total_ms"])]
    assert browser.find_element(By.CSS_SELECTOR, "#ops-table th.sorted").text == "total ms ▴"
    shot(browser, "ops_sorted")


def test_ops_columns_source_and_unknown_rates(server, browser, log_dir):
    ops = {o["name"]: o for o in jaxprof_json("ops", log_dir)["ops"]}
    fresh(browser, server + "#/ops")
    wait_for(browser, "#ops-table td")
    heads = [th.text.rstrip(" ▴▾") for th in browser.find_elements(By.CSS_SELECTOR, "#ops-table th")]
    assert {"scope", "op_name", "source", "GFLOP/s", "GB/s"} <= set(heads)
    names = ops_column(browser, "op")
    for name, scope, op_name, source in zip(names, ops_column(browser, "scope"), ops_column(browser, "op_name"),
                                            ops_column(browser, "source")):
        o = ops[name]
        assert (scope, op_name) == (o["scope"], o["op_name"])
        assert source == o["source"].split("/")[-1]  # file:line, the whole path on hover
    # A rate is n/a exactly where the op's FLOPs (bytes) are unknown (0), else the number.
    for name, gflops, gbytes in zip(names, ops_column(browser, "GFLOP/s"), ops_column(browser, "GB/s")):
        o = ops[name]
        assert gflops == ("n/a" if o["flops"] == 0 else f"{o['gflops_per_s']:.2f}")
        assert gbytes == ("n/a" if o["bytes"] == 0 else f"{o['gbytes_per_s']:.2f}")
    assert any(o["flops"] == 0 for o in ops.values()), "the capture should hold an op without FLOPs (tanh)"
    # Columns: hide op_name, show module; the choice survives a reload.
    browser.find_element(By.CSS_SELECTOR, "#op-cols summary").click()
    browser.find_element(By.CSS_SELECTOR, "#op-cols input[value='op_name']").click()
    browser.find_element(By.CSS_SELECTOR, "#op-cols input[value='module']").click()
    WebDriverWait(browser, 10).until(lambda d: "cols=" in js(d, "location.hash"))
    fresh(browser, browser.current_url)
    wait_for(browser, "#ops-table td")
    heads = [th.text.rstrip(" ▴▾") for th in browser.find_elements(By.CSS_SELECTOR, "#ops-table th")]
    assert "op_name" not in heads and "module" in heads
    assert set(ops_column(browser, "module")) == {o["module"] for o in ops.values()}
    shot(browser, "ops_columns")
    # A step window from the URL: the ops of that step alone.
    fresh(browser, server + "#/ops?steps=2:2")
    wait_for(browser, "#ops-steps", "steps 2:2")
    step_ops = jaxprof_json("ops", log_dir, "--steps", "2:2")["ops"]
    assert ops_column(browser, "count") == [str(o["count"]) for o in sorted(step_ops, key=lambda o: -o["self_ms"])]


# ---- Ops grouped: the library's sums (?group=), not the page's -------------------------------------

def expected_groups(ops: list[dict], by: str) -> dict[str, dict]:
    """The ops summed by their `by` field as jp_ops_group sums them (computed here from the rows)."""
    groups: dict[str, dict] = {}
    for o in ops:
        k = o[by] or "(none)"
        g = groups.setdefault(k, {"count": 0, "self_ms": 0.0, "total_ms": 0.0, "min_ms": o["min_ms"], "max_ms": 0.0,
                                  "flops": 0.0, "bytes": 0.0, "devices": 0})
        g["count"] += o["count"]
        g["self_ms"] += o["self_ms"]
        g["total_ms"] += o["total_ms"]
        g["min_ms"], g["max_ms"] = min(g["min_ms"], o["min_ms"]), max(g["max_ms"], o["max_ms"])
        g["flops"] += o["flops"]
        g["bytes"] += o["bytes"]
        g["devices"] = max(g["devices"], o["devices"])
    return groups


@pytest.mark.parametrize("by", ["category", "module", "scope", "source"])
def test_api_groups_ops_by_a_field(server, log_dir, by):
    """/ops?group=BY sums the ops (all of them, or those ?filter= keeps) into one row per key, the
    key being the row's name and its BY field."""
    run = get(f"{server}api/runs")[1][0]["id"]
    ops = get(f"{server}api/run/{run}/ops")[1]["ops"]
    status, doc = get(f"{server}api/run/{run}/ops?group={by}")
    assert status == 200
    want = expected_groups(ops, by)
    assert [r["name"] for r in doc["ops"]] == sorted(want, key=lambda k: (-want[k]["self_ms"], k))
    for r in doc["ops"]:
        w = want[r["name"]]
        assert r[by] == r["name"] and r["op_name"] == ""
        assert (r["count"], r["devices"]) == (w["count"], w["devices"])
        for key in ("self_ms", "total_ms", "min_ms", "max_ms", "flops", "bytes"):
            assert r[key] == pytest.approx(w[key], rel=1e-5, abs=2e-6), key
        assert r["avg_ms"] == pytest.approx(w["total_ms"] / w["count"], rel=1e-5, abs=2e-6)
    name = ops[0]["name"]
    picked = [o for o in ops if any(isinstance(v, str) and re.search(name, v) for v in o.values())]
    status, doc = get(f"{server}api/run/{run}/ops?group={by}&filter={name}")
    assert status == 200 and sorted(r["name"] for r in doc["ops"]) == sorted(expected_groups(picked, by))


def test_api_group_refusals(server):
    run = get(f"{server}api/runs")[1][0]["id"]
    assert get(f"{server}api/run/{run}/ops?group=op")[0] == 400
    assert get(f"{server}api/run/{run}/ops?group=op")[1]["error"] == "group 'op': category, module, scope or source"
    assert get(f"{server}api/run/{run}/steps?group=category")[0] == 400
    assert get(f"{server}api/run/{run}/ops?group=category&filter=(")[0] == 400


def test_ops_page_groups_with_the_library(server, browser, log_dir):
    """Grouping on the Ops page shows the library's rows (?group=) for the page's filter."""
    fresh(browser, server + "#/ops")
    wait_for(browser, "#ops-table td")
    Select(browser.find_element(By.ID, "op-group")).select_by_visible_text("category")
    wait_for(browser, "#op-count", "groups")
    run = js(browser, "state.run")
    rows = fetch_json(browser, f"/api/run/{run}/ops?group=category")["ops"]
    assert ops_column(browser, "op") == [r["name"] for r in sorted(rows, key=lambda r: -r["self_ms"])]
    assert ops_column(browser, "count") == [str(r["count"]) for r in sorted(rows, key=lambda r: -r["self_ms"])]
    assert browser.find_element(By.ID, "op-count").text == f"{len(rows)} groups"
    assert "group=category" in js(browser, "location.hash")
    shot(browser, "ops_grouped")


# ---- Compare: the user picks the runs -------------------------------------------------------------

def diff_requests(driver: webdriver.Chrome) -> int:
    return js(driver, "performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/diff')).length")


def test_compare_waits_for_two_picked_runs(diff_server, diff_dirs, browser):
    _, base, new = diff_dirs
    fresh(browser, diff_server + "#/compare")
    prompt = wait_for(browser, "#cmp-prompt")
    assert "Pick a base run and a new run" in prompt.text
    assert not browser.find_elements(By.ID, "step-delta") and diff_requests(browser) == 0
    assert Select(browser.find_element(By.ID, "cmp-base")).first_selected_option.get_attribute("value") == ""
    runs = fetch_json(browser, "/api/runs")
    ids = {r["name"]: r["id"] for r in runs}
    # The runs listed to pick from, newest first.
    assert [r[0] for r in table_rows(browser, "cmp-runs")] == [r["path"] for r in reversed(runs)]
    shot(browser, "compare_pick")
    Select(browser.find_element(By.ID, "cmp-base")).select_by_value(ids["base"])
    wait_for(browser, "#cmp-prompt", "Pick a new run")
    assert f"base={ids['base']}" in js(browser, "location.hash") and "new=" not in js(browser, "location.hash")
    assert diff_requests(browser) == 0
    # The new run picked from the list's button.
    browser.find_element(By.CSS_SELECTOR, f"#cmp-runs button[data-as='new'][data-id='{ids['new']}']").click()
    line = wait_for(browser, "#step-delta", "→")
    assert js(browser, "location.hash").endswith(f"base={ids['base']}&new={ids['new']}")
    proc = run_jaxprof("diff", base, new, "--json")
    assert proc.returncode == 0, proc.stderr
    want = json.loads(proc.stdout)
    assert f"{want['steps']['change_pct']:+.1f}%".replace("-", "−") in line.text
    assert [r[0] for r in table_rows(browser, "cmp-ops")] == [o["change"] for o in want["ops"]]
    # The tables fit a 1400 px window: no horizontal scrollbar.
    assert js(browser, "document.documentElement.scrollWidth") <= js(browser, "document.documentElement.clientWidth")
    shot(browser, "compare_diff")
    # Long op names wrap and long scopes are cut with the whole text on hover: rows of 300-character
    # names still fit.
    browser.execute_script("""
        const long = {change: 'slower', delta_ms: 1, delta_pct: 5, base_ms: 1, new_ms: 2, base_count: 1, new_count: 1,
          name: 'fusion_' + 'x'.repeat(300), base_name: '', module: 'm', category: 'loop fusion',
          scope: 'train_step/' + 'layer/'.repeat(60), match: 'name'};
        document.getElementById('cmp-ops-wrap').innerHTML = diffTable('cmp-ops', [long], true);""")
    assert js(browser, "document.documentElement.scrollWidth") <= js(browser, "document.documentElement.clientWidth")
    scope_cell = browser.find_element(By.CSS_SELECTOR, "#cmp-ops td.clip")
    assert scope_cell.get_attribute("title").startswith("train_step/layer/")
    assert js(browser, "document.querySelector('#cmp-ops td.clip').scrollWidth > document.querySelector('#cmp-ops td.clip').clientWidth")
    browser.execute_script("document.getElementById('cmp-ops').scrollIntoView()")
    shot(browser, "compare_long_names")
    # Swapping keeps both picked and compares the other way round.
    fresh(browser, diff_server + f"#/compare?base={ids['base']}&new={ids['new']}")
    wait_for(browser, "#step-delta", "→")
    browser.find_element(By.ID, "cmp-swap").click()
    WebDriverWait(browser, 10).until(lambda d: js(d, "location.hash").endswith(f"base={ids['new']}&new={ids['base']}"))


# ---- Memory on CPU ---------------------------------------------------------------------------------

def test_memory_page_on_cpu_says_why_and_what_to_do(server, browser, log_dir):
    assert jaxprof_json("memory", log_dir)["memory"] == []
    fresh(browser, server + "#/memory")
    note = wait_for(browser, "#memory-none")
    assert "XLA:CPU records no allocator events" in note.text
    assert "jax.profiler.save_device_memory_profile" in note.text and "GPU or TPU" in note.text
    assert not browser.find_elements(By.ID, "memory-chart")
    shot(browser, "memory_cpu")


# ---- the Ops page on a GPU capture that compiles (tests/data/gpu) ----------------------------------

def test_ops_page_says_which_rows_are_the_autotuners(tmp_path, browser):
    """The compile capture's Ops page lists XLA's autotuner's ops like the program's (the text report
    puts them apart): a line over the table says how many rows and how much time they are, as the
    ops JSON counts them; a capture without them has no such line."""
    gpu = Path(__file__).resolve().parents[1] / "data" / "gpu"
    for name in ("h200_compile", "h200_transfers"):
        run = tmp_path / "logs" / "plugins" / "profile" / name
        run.mkdir(parents=True)
        shutil.copy(gpu / f"{name}.xplane.pb.gz", run / "vm.xplane.pb.gz")
    ops = {name: jaxprof_json("ops", tmp_path / "logs" / "plugins" / "profile" / name)["ops"]
           for name in ("h200_compile", "h200_transfers")}
    tuning = [o for o in ops["h200_compile"] if o["autotuning"]]
    assert len(tuning) > 10 and not [o for o in ops["h200_transfers"] if o["autotuning"]]
    for base in serve_dir(tmp_path / "logs"):
        runs = {r["name"]: r["id"] for r in get(base + "api/runs")[1]}
        fresh(browser, f"{base}#/ops?run={runs['h200_compile']}")
        wait_for(browser, "#ops-table td")
        note = browser.find_element(By.ID, "ops-autotuning").text
        assert note.startswith(f"{len(tuning)} of these rows ({fmt_ms(sum(o['self_ms'] for o in tuning))} ms)"), note
        shot(browser, "ops_autotuning")
        fresh(browser, f"{base}#/ops?run={runs['h200_transfers']}")
        wait_for(browser, "#ops-table td")
        assert not browser.find_elements(By.ID, "ops-autotuning")
