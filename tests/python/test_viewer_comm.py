"""The viewer's Communication page, the Overview's idle by cause and the Timeline's analysis rows
(exposed communication, launch delay), in a real headless Chromium (Debian's, through Selenium)
against `jaxprof view` serving real captures: the 8-device XLA:CPU program of comm_capture.py, the
real 4-core TPU capture (12 all-reduces, $JAXPROF_REAL_CAPTURES), the H200 captures of
tests/data/gpu, the MI300 capture, TensorFlow's 8-V100 BERT capture (several streams per device)
and a program of 230 psums (more collective instances than the page draws). Each number the pages
show is the one `jaxprof comm --json` (comm_instances included) / `jaxprof launch --json`
(launch_streams, launch_queue included) / `jaxprof steps --json` gives for the same file (the CLI's
are checked against the raw events in test_comm.py, test_launch.py and test_launch_streams.py); the
timeline rows' intervals are checked against an independent computation from the raw events
(jax.profiler.ProfileData). Screenshots at 1400x900 go to $JAXPROF_ARTIFACTS (default:
test-artifacts/)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from conftest import REAL_CAPTURES, headless_chromium, jaxprof_json
from raw_events import cpu_ops, raw_planes, users_of
from test_comm import COLLECTIVES, merge, tpu_ops
from test_viewer_browser import ARTIFACTS, serve_dir, wait_for
import hlo_truth

HERE = Path(__file__).resolve().parent
GPU = HERE.parent / "data" / "gpu"
TPU = REAL_CAPTURES / "jax_tpu_v6e_4core_inference.xplane.pb.gz"
MI300 = REAL_CAPTURES / "mi300_jax08_gemm.xplane.pb.gz"
BERT = REAL_CAPTURES / "tf_bert_8xv100_worker0.xplane.pb.gz"  # TensorFlow, 8 V100s: several streams per device

# More collective instances than the Communication page draws (200): one psum over 8 XLA:CPU devices
# called 230 times in the capture, each call an instance.
MANY_INSTANCES = """
import sys
sys.path.insert(0, sys.argv[2])  # tests/python, for cpu8
from cpu8 import SHARD_MAP_OPTS, mesh, shard_map
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P
f = jax.jit(shard_map(lambda x: jax.lax.psum(x, "x"), mesh=mesh, in_specs=P("x"), out_specs=P("x"), **SHARD_MAP_OPTS))
x = jnp.ones((8 * 16, 128), jnp.float32)
jax.block_until_ready(f(x))
jax.profiler.start_trace(sys.argv[1])
for _ in range(230):
    jax.block_until_ready(f(x))
jax.profiler.stop_trace()
"""


# ---- fixtures: one log directory of real runs, one server, one browser ------------------------------

@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """plugins/profile/<name>/ for the CPU comm capture (made here), the TPU, two H200 and the MI300
    captures (copied into the temporary log directory: the viewer serves no symbolic link)."""
    log = tmp_path_factory.mktemp("viewer_comm")
    made = tmp_path_factory.mktemp("comm_capture")
    proc = subprocess.run([sys.executable, str(HERE / "comm_capture.py"), str(made)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (cpu,) = made.rglob("*.xplane.pb")
    many_dir = tmp_path_factory.mktemp("comm_many")
    proc = subprocess.run([sys.executable, "-c", MANY_INSTANCES, str(many_dir), str(HERE)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (many,) = many_dir.rglob("*.xplane.pb")
    sources = {"cpu8": cpu, "tpu": TPU, "h200": GPU / "h200_transformer_cb.xplane.pb.gz",
               "h200_api": GPU / "h200_api_trace.xplane.pb.gz", "h200_deep": GPU / "h200_scan_nocb.xplane.pb.gz",
               "mi300": MI300, "bert": BERT, "h200_nocb": GPU / "h200_transformer_nocb.xplane.pb.gz", "many": many}
    out = {}
    for name, src in sources.items():
        run = log / "plugins" / "profile" / name
        run.mkdir(parents=True)
        dst = run / ("vm.xplane.pb.gz" if src.suffix == ".gz" else "vm.xplane.pb")
        shutil.copy(src, dst)
        out[name] = dst
    out["log"] = log
    return out


@pytest.fixture(scope="module")
def server(runs) -> Iterator[str]:
    yield from serve_dir(runs["log"])


@pytest.fixture(scope="module")
def ids(server) -> dict[str, str]:
    return {r["name"]: r["id"] for r in get(server + "api/runs")}


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    yield from headless_chromium("1400,900", page=(1400, 900))


def get(url: str):
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())


def shot(driver: webdriver.Chrome, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"comm_{name}.png"))


def fresh(driver: webdriver.Chrome, url: str) -> None:
    driver.get("about:blank")
    driver.get(url)


def fmt_ms(v: float) -> str:
    """The viewer's ms(): 1 decimal from 100, 3 from 1, else 4."""
    return f"{v:.1f}" if v >= 100 else f"{v:.3f}" if v >= 1 else f"{v:.4f}"


def fmt_bytes(b) -> str:
    if b is None:
        return "n/a"
    v, u = float(b), 0
    while v >= 1024 and u < 4:
        v, u = v / 1024, u + 1
    return f"{v:.1f} {['B', 'KiB', 'MiB', 'GiB', 'TiB'][u]}" if u else f"{b} B"


def rate(v) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def cells(driver: webdriver.Chrome, table: str, rows: str = "tr") -> list[list[str]]:
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in driver.find_elements(By.CSS_SELECTOR, f"#{table} {rows}") if tr.find_elements(By.TAG_NAME, "td")]


def short(dev: str) -> str:
    return dev.removeprefix("/device:")


# ---- the Communication page ---------------------------------------------------------------------------

def expected_row(r: dict) -> list[str]:
    """A comm JSON row as the page's table writes it."""
    return [f"{r['name']}\n{r['module']}", r["type"], fmt_bytes(r["bytes"]),
            "n/a" if r["group_size"] is None else str(r["group_size"]), str(r["count"]), fmt_ms(r["total_ms"]),
            fmt_ms(r["hidden_ms"]), fmt_ms(r["exposed_ms"]), f"{r['overlap_pct']:.1f}", rate(r["algbw_gbps"]),
            rate(r["busbw_gbps"]), fmt_ms(r["wait_ms"]),
            (short(r["last_device"]) if r["last_device"] else "—") + (f" {r['last_count']}×" if r["last_count"] else ""),
            str(r["stragglers"]) + (f" {short(r['straggler'])}" if r["straggler"] else "")]


def check_comm_page(driver, base, run_id, path: Path, name: str) -> dict:
    doc, steps = jaxprof_json("comm", path), jaxprof_json("steps", path)
    fresh(driver, f"{base}#/comm?run={run_id}")
    wait_for(driver, "#comm-table td")
    # the table, in the CLI's order (total time, the most first), every cell the JSON's
    assert cells(driver, "comm-table") == [expected_row(r) for r in doc["comm"]]
    # the busbw chart: a dot per collective with a busbw, at its size and busbw (in its tooltip)
    dots = driver.find_elements(By.CSS_SELECTOR, "#comm-busbw circle.comm-pt")
    with_bw = [r for r in doc["comm"] if r["busbw_gbps"] is not None and r["bytes"]]
    assert len(dots) == len(with_bw) > 0
    tips = sorted(d.find_element(By.TAG_NAME, "title").get_attribute("textContent") for d in dots)
    assert tips == sorted(f"{r['name']} ({r['type']}, {r['module']}): {fmt_bytes(r['bytes'])}, n={r['group_size']},\n"
                          f"busbw {rate(r['busbw_gbps'])} GB/s, algbw {rate(r['algbw_gbps'])} GB/s, {r['count']} instances"
                          for r in with_bw)
    # per device: its collective time, hidden, exposed, overlap and wait
    devs = [d for d in doc["devices"] if d["collective_ms"] > 0]
    assert [c[:6] for c in cells(driver, "comm-devices")] == [
        [d["name"], fmt_ms(d["collective_ms"]), fmt_ms(d["collective_hidden_ms"]), fmt_ms(d["collective_exposed_ms"]),
         f"{d['overlap_pct']:.1f}", fmt_ms(d["collective_wait_ms"])] for d in devs]
    shot(driver, name)
    return {"doc": doc, "steps": steps["steps"]}


def test_comm_page_on_the_8_device_cpu_program(server, ids, runs, browser):
    """All 7 collectives (psum, all_gather, psum_scatter, ppermute, a grouped psum, the overlapped and
    the serial psum) with the CLI's numbers; a stacked bar per step whose hidden and exposed parts
    are the steps document's; clicking a heading sorts by it."""
    got = check_comm_page(browser, server, ids["cpu8"], runs["cpu8"], "cpu8")
    doc, steps = got["doc"], got["steps"]
    assert len(doc["comm"]) == 7 and {r["type"] for r in doc["comm"]} == COLLECTIVES - {"all-to-all"}
    bars = browser.find_elements(By.CSS_SELECTOR, "#comm-steps g.comm-step")
    want = [s for s in steps if s["collective_hidden_ms"] > 0 or s["collective_exposed_ms"] > 0]
    assert len(bars) == len(want) == 3
    for g, s in zip(bars, want):
        assert g.find_element(By.TAG_NAME, "title").get_attribute("textContent") == (
            f"step {s['step']}: hidden {fmt_ms(s['collective_hidden_ms'])} ms, exposed {fmt_ms(s['collective_exposed_ms'])} ms"
            f" of {fmt_ms(s['duration_ms'])} ms")
        exposed, hidden = g.find_elements(By.TAG_NAME, "rect")  # heights in proportion to the values
        if s["collective_hidden_ms"] > 0:
            ratio = float(hidden.get_attribute("height")) / float(exposed.get_attribute("height"))
            assert ratio == pytest.approx(s["collective_hidden_ms"] / s["collective_exposed_ms"], rel=0.02, abs=0.01)
    browser.find_element(By.CSS_SELECTOR, '#comm-table th[data-key="busbw_gbps"]').click()
    col = [row[10] for row in cells(browser, "comm-table")]
    assert col == [rate(r["busbw_gbps"]) for r in sorted(doc["comm"], key=lambda r: -r["busbw_gbps"])]


def test_comm_page_on_the_tpu_capture(server, ids, runs, browser):
    """The TPU's one all-reduce row (12 runs, 5 GiB, n = 2, its busbw); its all-reduces ran before
    the first step, which the step chart says in words rather than drawing nothing."""
    got = check_comm_page(browser, server, ids["tpu"], runs["tpu"], "tpu")
    (r,) = got["doc"]["comm"]
    assert (r["count"], r["bytes"], r["group_size"]) == (12, 5 << 30, 2)
    assert not [s for s in got["steps"] if s["collective_hidden_ms"] or s["collective_exposed_ms"]]
    text = browser.find_element(By.ID, "comm-steps-none").text
    assert text.startswith(f"None of the {len(got['steps'])} steps holds the start of a collective")


def test_comm_page_without_collectives_says_so(server, ids, browser):
    """A GPU capture with no collective: one line that says so, no empty table or charts."""
    fresh(browser, f"{server}#/comm?run={ids['h200']}")
    wait_for(browser, "#comm-none")
    assert browser.find_element(By.ID, "comm-none").text.startswith("No collectives in this profile")
    assert not browser.find_elements(By.ID, "comm-table") and not browser.find_elements(By.TAG_NAME, "svg")
    shot(browser, "none")


# ---- the Communication page's collective instances ----------------------------------------------------------

INST_ROWS = 200  # comm.js draws the first 200 of the order picked


def expected_instance(r: dict) -> list[str]:
    """A comm_instances JSON row as the page's table writes it."""
    strag = "—"
    if r["straggler"]:
        strag = short(r["straggler_device"]) + (f" +{r['stragglers'] - 1}" if r["stragglers"] > 1 else "")
    return [r["name"], r["module"], r["type"], str(r["index"]), "—" if r["step"] is None else str(r["step"]),
            str(r["devices"]), fmt_ms(r["start_ms"]), fmt_ms(r["arrival_spread_ms"]), fmt_ms(r["wait_ms"]),
            fmt_ms(r["exposed_min_ms"]), fmt_ms(r["exposed_max_ms"]), short(r["last_device"]) if r["last_device"] else "—",
            strag, "n/a" if r["z_max"] is None else f"{r['z_max']:.2f}", "Timeline"]


def instance_window(r: dict) -> tuple[float, float]:
    """The Timeline window comm.js links an instance to: its earliest start to the latest start plus
    the most exposed time of a device, a quarter of that length around it."""
    length = max(r["arrival_spread_ms"] + r["exposed_max_ms"], 1e-3)
    return max(0.0, r["start_ms"] - length / 4), r["start_ms"] + length * 1.25


def check_instances(driver, base, run_id, path: Path) -> list[dict]:
    doc = jaxprof_json("comm", path)
    inst = doc["comm_instances"]
    fresh(driver, f"{base}#/comm?run={run_id}")
    wait_for(driver, "#comm-instances td")
    by_wait = sorted(inst, key=lambda r: -r["wait_ms"])  # the page's first order; ties keep the JSON's
    assert cells(driver, "comm-instances") == [expected_instance(r) for r in by_wait[:INST_ROWS]]
    more = driver.find_element(By.ID, "comm-instances-more").text
    if len(inst) > INST_ROWS:
        assert more.startswith(f"{len(inst) - INST_ROWS} more ({len(inst)} instances;")
    else:
        assert more == ""
    return inst


def test_comm_instances_on_the_8_device_cpu_program(server, ids, runs, browser):
    """Every one of the program's 21 instances (7 collectives x 3 steps) with the numbers of `jaxprof
    comm --json`'s comm_instances, longest wait first, the stragglers named; a click on start sorts
    by it; a click on a row opens the Timeline on that instance's window."""
    inst = check_instances(browser, server, ids["cpu8"], runs["cpu8"])
    assert len(inst) == 21 and all(r["devices"] == 8 for r in inst) and {r["step"] for r in inst} == {0, 1, 2}
    strag = [r for r in inst if r["straggler"]]
    shown = {row[12] for row in cells(browser, "comm-instances")}
    assert {expected_instance(r)[12] for r in strag} <= shown  # each straggler device on the page, as the JSON names it
    shot(browser, "instances_cpu8")
    browser.find_element(By.CSS_SELECTOR, '#comm-instances th[data-key="start_ms"]').click()
    assert [row[6] for row in cells(browser, "comm-instances")] == [fmt_ms(r["start_ms"])
                                                                   for r in sorted(inst, key=lambda r: -r["start_ms"])]
    browser.find_element(By.CSS_SELECTOR, '#comm-instances th[data-key="start_ms"]').click()  # again: ascending
    first = sorted(inst, key=lambda r: r["start_ms"])[0]
    row = browser.find_elements(By.CSS_SELECTOR, "#comm-instances tr.inst")[0]
    a, b = instance_window(first)
    link = row.find_element(By.CSS_SELECTOR, "a.inst-tl").get_attribute("href")
    params = dict(p.split("=") for p in link.split("?", 1)[1].split("&"))
    assert float(params["start_us"]) == pytest.approx(a * 1000, abs=1e-3)
    assert float(params["end_us"]) == pytest.approx(b * 1000, abs=1e-3)
    row.find_elements(By.TAG_NAME, "td")[2].click()  # the row, not its link
    wait_for(browser, ".tl-track")
    assert browser.execute_script("return location.hash").startswith("#/timeline?")
    start, end = browser.execute_script("return [TL.start, TL.end]")
    assert start == pytest.approx(a, abs=1e-6) and end == pytest.approx(b, abs=1e-6)
    # the window holds the instance: each device's exposed stretch of it starts inside
    win = get(f"{server}api/run/{ids['cpu8']}/timeline?start_ms={a}&end_ms={b}&px=2000")
    for t in (t for t in win["tracks"] if t["kind"] == "exposed_comm"):
        assert any(a * 1000 <= e[0] <= b * 1000 for e in t["events"]), t["thread"]


def test_comm_instances_on_the_tpu_capture(server, ids, runs, browser):
    """The TPU's 3 all-reduce instances over its 4 cores, before any step (step —), as the JSON has them."""
    inst = check_instances(browser, server, ids["tpu"], runs["tpu"])
    assert len(inst) == 3 and all(r["devices"] == 4 and r["step"] is None for r in inst)
    shot(browser, "instances_tpu")


def test_comm_instances_past_200_say_how_many_more(server, ids, runs, browser):
    """230 runs of one psum on 8 devices: 230 instances in the JSON, the page draws 200 by wait and
    says "30 more"; sorted by k, the first 200 k's."""
    inst = check_instances(browser, server, ids["many"], runs["many"])
    assert len(inst) == 230 and {r["index"] for r in inst} == set(range(230))
    assert browser.find_element(By.ID, "comm-instances-more").text.startswith("30 more (230 instances;")
    browser.find_element(By.CSS_SELECTOR, '#comm-instances th[data-key="index"]').click()  # k, most first
    browser.find_element(By.CSS_SELECTOR, '#comm-instances th[data-key="index"]').click()  # then ascending
    assert [row[3] for row in cells(browser, "comm-instances")] == [str(k) for k in range(200)]


def test_api_comm_and_launch_carry_the_new_tables(server, ids, runs):
    """The viewer's comm and launch answers are the CLI's documents, comm_instances, launch_streams
    and launch_queue included (all but the path, which the server names relative to the log directory)."""
    for section, name, keys in (("comm", "cpu8", {"comm_instances"}),
                                ("launch", "h200_nocb", {"launch_streams", "launch_queue"})):
        api_doc, cli = get(f"{server}api/run/{ids[name]}/{section}"), jaxprof_json(section, runs[name])
        assert keys <= api_doc.keys()
        assert {k: v for k, v in api_doc.items() if k != "path"} == {k: v for k, v in cli.items() if k != "path"}


# ---- the Overview's idle by cause ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["h200", "h200_api", "mi300"])
def test_overview_idle_by_cause_is_the_launch_document(server, ids, runs, browser, name):
    """Per device with launches: idle waiting for the host, kernel to kernel and other, launches and
    queue depth, as `jaxprof launch --json` has them, a bar whose parts are in proportion, and a
    line explaining each part."""
    doc = jaxprof_json("launch", runs[name])
    devs = [d for d in doc["devices"] if d["launched"] > 0]
    assert devs
    fresh(browser, f"{server}#/overview?run={ids[name]}")
    wait_for(browser, "#idle-table td")
    assert [[c[0].split(" ▸")[0]] + c[2:] for c in cells(browser, "idle-table", "tr.idle-dev")] == [
        [d["name"], fmt_ms(d["idle_host_ms"]), fmt_ms(d["idle_kernel_ms"]), fmt_ms(d["idle_other_ms"]), str(d["launched"]),
         str(d["queue_max"]), f"{d['queue_mean']:.2f}"] for d in devs]
    for tr, d in zip(browser.find_elements(By.CSS_SELECTOR, "#idle-table tr.idle-dev .idle-bar"), devs):
        parts = tr.find_elements(By.TAG_NAME, "span")
        total = d["idle_host_ms"] + d["idle_kernel_ms"] + d["idle_other_ms"]
        want = [k for k in ("idle_host_ms", "idle_kernel_ms", "idle_other_ms") if d[k] > 0]
        assert [p.get_attribute("title").rsplit(" ", 2)[1] for p in parts] == [fmt_ms(d[k]) for k in want]
        for p, k in zip(parts, want):
            assert float(p.get_attribute("style").split("width:")[1].split("%")[0]) == pytest.approx(100 * d[k] / total, abs=0.01)
    help_items = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#idle-help li")]
    assert [t.split(":")[0] for t in help_items[:3]] == ["waiting for the host", "kernel to kernel", "other"]
    if name == "h200":
        shot(browser, "overview_idle")


def test_overview_has_no_idle_breakdown_without_launches(server, ids, browser):
    """XLA:CPU records no launches: no idle-by-cause section at all."""
    fresh(browser, f"{server}#/overview?run={ids['cpu8']}")
    wait_for(browser, "#kpis")
    assert not browser.find_elements(By.ID, "idle-table")


# ---- the Overview's per-stream split and launch queue depth ---------------------------------------------------

def stream_row(s: dict) -> list[str]:
    return [s["stream"], "", fmt_ms(s["busy_ms"]), fmt_ms(s["idle_host_ms"]), fmt_ms(s["idle_kernel_ms"]),
            fmt_ms(s["idle_other_ms"]), str(s["events"]), str(s["launched"]), fmt_ms(s["first_ms"]), fmt_ms(s["last_ms"])]


@pytest.mark.parametrize("name", ["bert", "h200_nocb"])
def test_overview_idle_per_stream(server, ids, runs, browser, name):
    """A device with several streams gets a button that opens its streams' split (busy, waiting for
    the host, kernel to kernel, other, events, launched, first and last) as `jaxprof launch --json`'s
    launch_streams has them, each a bar of its first-to-last window whose parts are in proportion; a
    device with one stream gets none (the V100 capture's GPU:1)."""
    doc = jaxprof_json("launch", runs[name])
    devs = [d for d in doc["devices"] if d["launched"] > 0]
    fresh(browser, f"{server}#/overview?run={ids[name]}")
    wait_for(browser, "#idle-table td")
    rows = browser.find_elements(By.CSS_SELECTOR, "#idle-table tr.idle-dev")
    assert len(rows) == len(devs)
    several = 0
    for tr, d in zip(rows, devs):
        mine = [s for s in doc["launch_streams"] if s["device"] == d["name"]]
        buttons = tr.find_elements(By.CSS_SELECTOR, "button.idle-toggle")
        if len(mine) < 2:
            assert not buttons, d["name"]
            continue
        several += 1
        (button,) = buttons
        assert button.text == f"▸ {len(mine)} streams"
        sub = tr.find_element(By.XPATH, "following-sibling::tr[1]")
        assert not sub.is_displayed()
        button.click()
        assert sub.is_displayed() and button.text == f"▾ {len(mine)} streams"
        got = [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in sub.find_elements(By.CSS_SELECTOR, "table tr")[1:]]
        assert got == [stream_row(s) for s in mine], d["name"]
        for r, s in zip(sub.find_elements(By.CSS_SELECTOR, "table tr")[1:], mine):
            window = s["last_ms"] - s["first_ms"]
            parts = {p.get_attribute("title").rsplit(" ", 2)[0]: p for p in r.find_elements(By.CSS_SELECTOR, ".idle-bar span")}
            for key, label in (("busy_ms", "busy"), ("idle_host_ms", "waiting for the host"),
                               ("idle_kernel_ms", "kernel to kernel"), ("idle_other_ms", "other")):
                if s[key] > 0:
                    pct = float(parts[label].get_attribute("style").split("width:")[1].split("%")[0])
                    assert pct == pytest.approx(100 * s[key] / window, abs=0.02), (s["stream"], label)
    assert several == (2 if name == "bert" else 1)
    shot(browser, f"streams_{name}")


def path_steps(d: str) -> list[tuple[float, float]]:
    """The (x, y) after each V of the queue chart's step line ("M x y V y H x V y ...")."""
    toks = re.findall(r"([MHV])([-\d.]+)(?: ([-\d.]+))?", d)
    x, out = None, []
    for cmd, a, b in toks:
        if cmd == "M":
            x = float(a)
        elif cmd == "H":
            x = float(a)
        else:
            out.append((x, float(a)))
    return out


@pytest.mark.parametrize("name", ["bert", "h200_nocb"])
def test_overview_launch_queue_charts(server, ids, runs, browser, name):
    """One step line per device in launch --json's launch_queue, each vertex a point of its series
    (time and depth read back through the chart's axes), the downsampled one saying its bucket (the
    H200 transformer without command buffers: 4,048 changes, 751 points), and the depth under the
    pointer the series' at that time."""
    doc = jaxprof_json("launch", runs[name])
    series = [q for q in doc["launch_queue"]["devices"] if q["points"]]
    dev = {d["name"]: d for d in doc["devices"]}
    fresh(browser, f"{server}#/overview?run={ids[name]}")
    wait_for(browser, "#queue-charts svg")
    boxes = browser.find_elements(By.CSS_SELECTOR, "#queue-charts .queue-box")
    assert len(boxes) == len(series) > 0
    assert any(q["downsampled"] for q in series) == (name == "h200_nocb")
    for box, q in zip(boxes, series):
        svg = box.find_element(By.TAG_NAME, "svg")
        assert svg.get_attribute("data-device") == q["device"]
        pts = q["points"]
        t0, t1, top = (float(svg.get_attribute(k)) for k in ("data-t0", "data-t1", "data-top"))
        assert t0 == pytest.approx(pts[0][0]) and t1 == pytest.approx(pts[-1][0]) and top >= dev[q["device"]]["queue_max"]
        assert max(p[1] for p in pts) == dev[q["device"]]["queue_max"]
        L, R, T, B, W, H = 44, 12, 10, 28, float(svg.get_attribute("width")), float(svg.get_attribute("height"))
        drawn = path_steps(svg.find_element(By.CSS_SELECTOR, "path.queue-line").get_attribute("d"))
        assert len(drawn) == len(pts)
        px_ms = (t1 - t0) / (W - L - R)
        for (x, y), (t, depth) in zip(drawn, pts):
            assert t0 + (x - L) * px_ms == pytest.approx(t, abs=0.006 * px_ms + 1e-9)
            assert round(top * (H - B - y) / (H - T - B)) == depth
        note = box.find_element(By.CSS_SELECTOR, ".queue-note").text
        if q["downsampled"]:
            assert (q["changes"], len(pts)) == (4048, 751)
            assert note == f"downsampled: max per {fmt_ms(q['bucket_ms'])} ms bucket (4,048 changes, 751 points drawn)"
        else:
            assert note == f"{q['changes']:,} changes, every one drawn"
        # hover halfway along the widest flat stretch: the depth the series holds there
        i = max(range(len(drawn) - 1), key=lambda k: drawn[k + 1][0] - drawn[k][0])
        x = (drawn[i][0] + drawn[i + 1][0]) / 2
        ActionChains(browser).move_to_element_with_offset(svg, int(x - W / 2), 0).perform()
        text = box.find_element(By.CSS_SELECTOR, ".queue-hover").text
        assert text.split(": ")[1].split(" ")[0] == str(pts[i][1]), (q["device"], text)
        assert text.endswith("(the most in its bucket)") == q["downsampled"]
    shot(browser, f"queue_{name}")


# ---- the Timeline's analysis rows ----------------------------------------------------------------------

def analysis_events(base: str, run_id: str, kind: str) -> dict[str, list[dict]]:
    """Every event of the analysis rows of one kind, by row (process and thread), from the event
    endpoint: exact, none merged."""
    win = get(f"{base}api/run/{run_id}/timeline?px=1000")
    out = {}
    for t in win["tracks"]:
        if t["kind"] != kind:
            continue
        evs, i = [], 0
        while True:
            try:
                evs.append(get(f"{base}api/run/{run_id}/event?track={t['id']}&index={i}"))
            except urllib.error.HTTPError as e:
                assert e.code == 404
                break
            i += 1
        out[f"{t['process']} | {t['thread']}"] = evs
    return out


def subtract(union, comp):
    """The parts of the disjoint sorted intervals union that the merged intervals comp do not cover."""
    out = []
    for s, e in union:
        at = s
        for a, b in comp:
            if b <= at or a >= e:
                continue
            if a > at:
                out.append((at, a))
            at = max(at, b)
        if at < e:
            out.append((at, e))
    return out


def exposed_truth(ops, is_comm):
    """Per device: the union of its collectives less the union of its compute ops (an async half
    is no compute), from the raw events."""
    comm, comp = {}, {}
    for o in ops:
        if is_comm(o):
            comm.setdefault(o[0], []).append((o[3], o[4]))
        elif not o[2].endswith(("-start", "-done")) and "-start." not in o[2] and "-done." not in o[2]:
            comp.setdefault(o[0], []).append((o[3], o[4]))
    return {d: subtract(merge(v), merge(comp.get(d, []))) for d, v in comm.items()}


def check_exposed_rows(rows: dict, truth: dict, doc: dict, device_name, process_of):
    assert len(rows) == len(truth) > 0
    for dev, want in truth.items():
        name = device_name(dev)
        evs = rows[process_of(name)]
        got = [(e["start_us"] * 1e3, (e["start_us"] + e["dur_us"]) * 1e3) for e in evs]
        assert len(got) == len(want), name
        for (gs, ge), (ws, we) in zip(sorted(got), want):
            assert gs == pytest.approx(ws, abs=2) and ge == pytest.approx(we, abs=2), name  # ns; the index floors ps to ns
        assert all(e["name"] == "exposed communication" and e["args"]["exposed_us"] == pytest.approx(e["dur_us"], abs=2.1e-3)
                   for e in evs)
        # and the row sums to the device's exposed time in `jaxprof comm --json`
        dev_doc = next(d for d in doc["devices"] if d["name"] == name)
        assert sum(e["dur_us"] for e in evs) / 1e3 == pytest.approx(dev_doc["collective_exposed_ms"], abs=1e-3 + 1e-6 * len(evs))


def test_timeline_exposed_rows_on_the_cpu_program_match_the_raw_events(server, ids, runs):
    """Per device (8 on XLA:CPU, which run on /host:CPU's threads: the rows say which device), the
    stretches where a collective ran and no compute op did, as computed here from the raw op
    events (their device_ordinal; an async thunk ends at its "end:" event, as test_comm reads it)."""
    path = runs["cpu8"]
    progs = {p.module: p for p in hlo_truth.programs(path)}
    opcode = {(m, n): i.opcode for m, p in progs.items() for n, i in p.instrs.items()}
    ops = cpu_ops(path, True, users_of(progs))
    truth = exposed_truth(ops, lambda o: opcode.get((o[1], o[2])) in COLLECTIVES)
    rows = analysis_events(server, ids["cpu8"], "exposed_comm")
    check_exposed_rows(rows, truth, jaxprof_json("comm", path), lambda d: f"/device:CPU:{d}",
                       lambda name: f"/host:CPU | Exposed communication {name}")


def test_timeline_exposed_rows_on_the_tpu_match_the_raw_events(server, ids, runs):
    """The TPU's 4 cores: each core's own row, its all-reduces less its compute ops (XLA Ops line)."""
    truth = exposed_truth(tpu_ops(TPU), lambda o: o[2] == "all-reduce")
    rows = analysis_events(server, ids["tpu"], "exposed_comm")
    check_exposed_rows(rows, truth, jaxprof_json("comm", runs["tpu"]), lambda d: d,
                       lambda name: f"{name} | Exposed communication")


def launch_truth(path: Path) -> dict[str, list[tuple[float, float, str, str]]]:
    """Per device plane: each launch (a host event and device events sharing a correlation_id) as
    (call start, earliest work start, call name, that work's name), from the raw events."""
    calls, work = {}, {}
    for plane in raw_planes(path):
        device = plane.name.startswith("/device:")
        for line in plane.lines:
            for ev in line.events:
                cid = dict(ev.stats).get("correlation_id")
                if cid is None:
                    continue
                if not device:
                    calls.setdefault(cid, (ev.start_ns, ev.name))
                elif cid not in work.get(plane.name, {}) or ev.start_ns < work[plane.name][cid][0]:
                    work.setdefault(plane.name, {})[cid] = (ev.start_ns, ev.name)
    return {p: sorted((calls[c][0], max(calls[c][0], w[0]), calls[c][1], w[1]) for c, w in ws.items() if c in calls)
            for p, ws in work.items()}


LANES = 8  # Launch delay rows of one launch a slice (timeline.c); deeper launches are merged


@pytest.mark.parametrize("name", ["h200", "h200_api", "h200_deep", "mi300"])
def test_timeline_launch_delay_rows_match_the_raw_events(server, ids, runs, name):
    """Per GPU, Launch delay rows: each launch from its call's start to the start of its work, named
    by the work with the call in its details, as computed here from the correlation ids of the raw
    events; the launches of a queue deeper than 8 rows (h200_scan_nocb queues 617) merged into one
    more row whose slices cover them and count them. Every launch `jaxprof launch --json` matched
    is drawn alone or counted, and the rows never overlap within themselves."""
    truth = launch_truth(runs[name])
    rows = analysis_events(server, ids[name], "launch_delay")
    assert {k.split(" | ")[0] for k in rows} == set(truth)
    launched = {d["name"]: d["launched"] for d in jaxprof_json("launch", runs[name])["devices"]}
    for plane, want in truth.items():
        mine = {k.split(" | ")[1]: v for k, v in rows.items() if k.startswith(f"{plane} | ")}
        assert set(mine) <= {"Launch delay", *(f"Launch delay (overlap {k})" for k in range(1, LANES)),
                             "Launch delay (deeper, merged)"}
        for evs in mine.values():  # one row, one depth: no two slices of a row overlap
            spans = sorted((e["start_us"], e["start_us"] + e["dur_us"]) for e in evs)
            assert all(e["depth"] == 0 for e in evs) and all(a[1] <= b[0] + 1e-3 for a, b in zip(spans, spans[1:]))
        merged = mine.pop("Launch delay (deeper, merged)", [])
        alone = sorted((e["start_us"] * 1e3, (e["start_us"] + e["dur_us"]) * 1e3, e["args"]["call"], e["name"])
                       for v in mine.values() for e in v)
        counted = sum(e["args"]["launches"] for e in merged)
        assert len(alone) + counted == len(want) == launched[plane] > 0
        assert (counted > 0) == (name == "h200_deep")
        left = list(want)
        for g in alone:  # each launch drawn alone is one of the raw launches, to the ns
            hit = next(w for w in left if abs(g[0] - w[0]) <= 2 and abs(g[1] - w[1]) <= 2 and g[2:] == w[2:])
            left.remove(hit)
        for w in left:  # and the rest lie in a merged slice
            assert any(e["start_us"] * 1e3 - 2 <= w[0] and w[1] <= (e["start_us"] + e["dur_us"]) * 1e3 + 2 for e in merged)
        assert all(e["name"] == f"{e['args']['launches']} launch{'es' if e['args']['launches'] > 1 else ''} queued deeper"
                   for e in merged)


def test_timeline_page_shows_the_analysis_rows_under_the_steps(server, ids, browser):
    """In the browser: the CPU program's 8 Exposed communication rows come right after /host:CPU's
    Steps row, above its threads; the H200's Launch delay row after its XLA rows, above its streams;
    a click on an exposed stretch opens its details."""
    fresh(browser, f"{server}#/timeline?run={ids['cpu8']}")
    wait_for(browser, ".tl-track")
    labels = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".tl-label.tl-track")]
    assert labels[0] == "Steps" and labels[1:9] == [f"Exposed communication /device:CPU:{d}" for d in range(8)]
    shot(browser, "timeline_cpu8")
    fresh(browser, f"{server}#/timeline?run={ids['h200']}")
    wait_for(browser, ".tl-track")
    labels = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".tl-label.tl-track")]
    assert labels[:4] == ["Steps", "XLA Modules", "XLA Ops", "Launch delay"] and labels[4].startswith("Stream")
    shot(browser, "timeline_h200")
