"""The built-in viewer's Timeline: its API (windows equal to the exported trace, derived rows, density
strips, exact range totals, event details with the HLO instruction) and the page in a real browser
(Debian's Chromium, headless, through Selenium): the time ruler, clipping, track names and groups,
range selection with its table, the details panel, keyboard navigation, the URL, flows. Screenshots
at 1400x900 go to $JAXPROF_ARTIFACTS (default: test-artifacts/)."""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import REAL_CAPTURES, capture_steps, headless_chromium, run_jaxprof
from test_export import gpu_profile
from test_hosts import write_run
from test_viewer_api import CAP, Viewer, all_events, run_path, serve  # noqa: F401  (serve: a fixture)
from test_viewer_browser import canvas_ink, js, serve_dir, shot, wait_for, window_of
from xplane_gen import XSpace, big_xplane

UNITS_MS = {"s": 1e3, "ms": 1.0, "µs": 1e-3, "ns": 1e-6}
REAL = REAL_CAPTURES  # real captures by others


# ---- the exported trace: what the timeline must show ------------------------------------------------

def export_doc(path: Path, out: Path) -> dict[str, Any]:
    """`jaxprof export PATH -o out.json`, parsed."""
    proc = run_jaxprof("export", path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def ns(us: float) -> int:
    """The exporter writes microseconds with nanosecond digits: back to whole nanoseconds."""
    return round(us * 1000)


ANALYSIS_KINDS = ("exposed_comm", "launch_delay")  # the viewer's own rows, not in the export (test_viewer_comm)


def analysis_threads(window: dict[str, Any]) -> dict[tuple[str, str], list[dict]]:
    """The analysis rows of an unmerged window answer, as exported_threads writes threads."""
    return {(t["process"], t["thread"]): [{"name": window["names"][e[2]], "ts": e[0], "dur": e[1], "ph": "X"}
                                          for e in t["events"]] for t in window["tracks"] if t["kind"] in ANALYSIS_KINDS}


def exported_threads(doc: dict[str, Any]) -> dict[tuple[str, str], list[dict]]:
    """(process name, thread name) -> its slices and instants."""
    procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
               if e["ph"] == "M" and e["name"] == "thread_name"}
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] in ("X", "i"):
            out[(procs[e["pid"]], threads[(e["pid"], e["tid"])])].append(e)
    return out


def with_children(events: list[dict]) -> list[dict]:
    """Each slice with its direct children: one thread's slices nest strictly, so a stack finds them."""
    items = sorted(({"name": e["name"], "s": ns(e["ts"]), "e": ns(e["ts"]) + ns(e.get("dur", 0)),
                     "instant": e["ph"] == "i", "kids": []} for e in events), key=lambda x: (x["s"], -x["e"]))
    stack: list[dict] = []
    for it in items:
        while stack and (stack[-1]["e"] <= it["s"] if not it["instant"] else stack[-1]["e"] < it["s"]):
            stack.pop()
        if stack and not it["instant"]:
            stack[-1]["kids"].append(it)
        if not it["instant"]:
            stack.append(it)
    return items


def expected_totals(threads: list[list[dict]], a: int, b: int) -> dict[str, dict[str, int]]:
    """Per name, over the slices of these threads that overlap [a, b) ns (an instant: lies in it):
    count, whole wall and self time, and both clipped to the range (Perfetto's count, jaxprof's clip)."""
    clip = lambda s, e: max(0, min(e, b) - max(s, a))  # noqa: E731
    out: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(
        ("count", "total_ns", "self_ns", "in_range_ns", "self_in_range_ns"), 0))
    for events in threads:
        for it in with_children(events):
            hit = a <= it["s"] < b if it["instant"] else it["s"] < b and it["e"] > a
            if not hit:
                continue
            row = out[it["name"]]
            row["count"] += 1
            row["total_ns"] += it["e"] - it["s"]
            row["self_ns"] += it["e"] - it["s"] - sum(k["e"] - k["s"] for k in it["kids"])
            row["in_range_ns"] += clip(it["s"], it["e"])
            row["self_in_range_ns"] += clip(it["s"], it["e"]) - sum(clip(k["s"], k["e"]) for k in it["kids"])
    return dict(out)


def agg_rows(agg: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {r["name"]: {k: r[k] for k in ("count", "total_ns", "self_ns", "in_range_ns", "self_in_range_ns")}
            for r in agg["rows"]}


# ---- fixtures ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cpu_logdir(tmp_path_factory) -> Path:
    return capture_steps(tmp_path_factory.mktemp("timeline_cpu"))


@pytest.fixture(scope="module")
def cpu_run(cpu_logdir) -> Path:
    return next(p.parent for p in cpu_logdir.rglob("*.xplane.pb"))


@pytest.fixture(scope="module")
def cpu_export(cpu_run, tmp_path_factory) -> dict[str, Any]:
    return export_doc(cpu_run, tmp_path_factory.mktemp("timeline_export") / "t.json")


@pytest.fixture(scope="module")
def gpu_logdir(tmp_path_factory) -> Path:
    """test_export's GPU profile: launches linked to kernels, a partial overlap, an instant."""
    run = tmp_path_factory.mktemp("timeline_gpu") / "plugins" / "profile" / "gpu_run"
    run.mkdir(parents=True)
    gpu_profile(run / "gpu-host.xplane.pb")
    return run.parents[2]


@pytest.fixture(scope="module")
def server(cpu_logdir) -> Iterator[str]:
    yield from serve_dir(cpu_logdir)


@pytest.fixture(scope="module")
def hosts_server(tmp_path_factory) -> Iterator[str]:
    """Two hosts, each a GPU profile whose three launches link to their kernels."""
    run = tmp_path_factory.mktemp("timeline_hosts") / "plugins" / "profile" / "two_hosts"
    run.mkdir(parents=True)
    for host in ("host-a", "host-b"):
        gpu_profile(run / f"{host}.xplane.pb")
    yield from serve_dir(run.parents[2])


@pytest.fixture(scope="module")
def straggler_server(tmp_path_factory) -> Iterator[str]:
    """test_hosts' two-host run: b's clock 1 ms behind, b late in steps 3 and 4."""
    yield from serve_dir(write_run(tmp_path_factory.mktemp("timeline_straggler") / "plugins" / "profile" / "job").parents[2])


@pytest.fixture(scope="module")
def dense_server(tmp_path_factory) -> Iterator[str]:
    """200,000 events of 1 us every 2 us on 4 lines: sub-pixel at any zoom-out."""
    run = tmp_path_factory.mktemp("timeline_dense") / "plugins" / "profile" / "dense"
    run.mkdir(parents=True)
    big_xplane(run / "dense.xplane.pb", 200_000, 4)
    yield from serve_dir(run.parents[2])


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    yield from headless_chromium("1400,900")


# ---- the API ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["cpu", "gpu"])
def test_every_exported_thread_is_a_track_with_the_same_events(which, cpu_logdir, gpu_logdir, serve, tmp_path):
    """The viewer and `jaxprof export` lay the profile out alike: the same threads (derived rows
    included: Steps on CPU, XLA Ops and Modules on GPU), each with the same events to the nanosecond."""
    log_dir = cpu_logdir if which == "cpu" else gpu_logdir
    v = serve(log_dir)
    rid = v.run_id()
    doc = export_doc(run_path(log_dir, v, rid), tmp_path / "t.json")
    window = v.json(f"/api/run/{rid}/timeline?px=1000000")
    assert window["aggregated"] == 0 and window["total_events"] <= CAP
    got = {(t["process"], t["thread"]): sorted((window["names"][e[2]], round(e[0] * 1000), round(e[1] * 1000))
                                               for e in t["events"]) for t in window["tracks"]
           if t["events"] and t["kind"] not in ANALYSIS_KINDS}
    want = {k: sorted((e["name"], ns(e["ts"]), ns(e.get("dur", 0))) for e in evs) for k, evs in exported_threads(doc).items()}
    assert got == want
    # besides, the viewer's own rows: on the GPU layout one Launch delay per launch (three, queued
    # ahead of each other, so on three lanes), none for the CPU program without collectives
    extra = analysis_threads(window)
    assert window["analysis_events"] == sum(len(v) for v in extra.values()) == (3 if which == "gpu" else 0)
    kinds = {t["thread"]: t["kind"] for t in window["tracks"]}
    if which == "cpu":
        assert kinds["Steps"] == "steps"
        steps = [window["names"][e[2]] for t in window["tracks"] if t["thread"] == "Steps" for e in t["events"]]
        assert steps == ["step 1", "step 2", "step 3"]
    else:
        assert kinds["XLA Ops"] == "xla_ops" and kinds["XLA Modules"] == "xla_modules" and kinds["Steps"] == "steps"
    for t in window["tracks"]:  # levels: the track's depth over the whole profile
        assert t["levels"] == 1 + max((e[3] for e in t["events"]), default=0)


def test_dense_rows_carry_their_busy_fraction(tmp_path, serve):
    """At full zoom-out the server merges sub-pixel runs and sends, per pixel bucket, how busy the row
    is: 1 us events every 2 us are half busy (digit 1 + 0.5 x 15 rounded down = 8) in every bucket."""
    run = tmp_path / "logs" / "plugins" / "profile" / "dense"
    run.mkdir(parents=True)
    big_xplane(run / "dense.xplane.pb", 40_000, 2)  # 20,000 per line: 40 ms each
    v = serve(tmp_path / "logs")
    rid = v.run_id()
    doc = v.json(f"/api/run/{rid}/timeline?start_ms=0&end_ms=40&px=400")
    assert doc["px_ns"] == 100_000 and doc["aggregated"] == 40_000
    for t in doc["tracks"]:
        (e,) = t["events"]  # one merged run per line
        start, dur, name, depth, count, busy, bucket, digits = e
        assert name == -1 and count == 20_000 and busy == pytest.approx(20_000.0)  # 20,000 x 1 us
        assert bucket == 0 and len(digits) == 400 and set(digits) == {"8"}
    # A window that starts inside the run: the digits start at its first bucket, and cover it.
    # (10 ms wide at px=100: 100 us buckets, each half busy wherever they start)
    doc = v.json(f"/api/run/{rid}/timeline?start_ms=10.0005&end_ms=20.0005&px=100")
    e = doc["tracks"][0]["events"][0]
    assert e[0] == 10_000 and e[6] == 0 and len(e[7]) == 100 and set(e[7]) == {"8"}


def test_density_follows_the_load(tmp_path, serve):
    """Busy a quarter of the time for 5 ms, then three quarters: 100 us buckets read 1 + 15 x 0.25
    = 4, then 1 + 15 x 0.75 = c, and the run's busy time is every duration summed."""
    run = tmp_path / "logs" / "plugins" / "profile" / "load"
    run.mkdir(parents=True)
    space = XSpace(hostnames=["h"])
    line = space.plane("/host:CPU").line("worker", id=1)
    for k in range(2500):
        line.span("work", 4 * k, 4 * k + (1 if k < 1250 else 3))
    space.write(run / "h.xplane.pb")
    v = serve(tmp_path / "logs")
    rid = v.run_id()
    doc = v.json(f"/api/run/{rid}/timeline?start_ms=0&end_ms=10&px=100")
    (e,) = doc["tracks"][0]["events"]
    assert e[2] == -1 and e[4] == 2500 and e[5] == pytest.approx(1250 * 1 + 1250 * 3)
    assert e[6] == 0 and e[7] == "4" * 50 + "c" * 50
    # A window that cuts the run: its first bucket counts only the part inside.
    doc = v.json(f"/api/run/{rid}/timeline?start_ms=5.0005&end_ms=5.1005&px=1")
    (e,) = doc["tracks"][0]["events"]
    assert e[7] == "c" and e[6] == 0  # 75 us of 100 us busy: 2.5 + 24 x 3 + 0.5


def test_range_totals_are_exact_against_the_exported_trace(gpu_logdir, serve, tmp_path):
    v = serve(gpu_logdir)
    rid = v.run_id()
    doc = export_doc(run_path(gpu_logdir, v, rid), tmp_path / "t.json")
    window = v.json(f"/api/run/{rid}/timeline?px=1000000")
    threads = {**exported_threads(doc), **analysis_threads(window)}  # no ?tracks=: every track, the viewer's own too
    track_of = {(t["process"], t["thread"]): t["id"] for t in window["tracks"]}
    # [360, 435) us cuts gemm_b, "add" and "overlapping" on the stream, and holds the instant at 430
    for a, b, picked in [(360_000, 435_000, None), (0, 2_000_000, None),
                         (360_000, 435_000, [("/device:GPU:0", "Stream #7(Compute)"), ("/device:GPU:0", "XLA Ops")])]:
        keys = picked or list(threads)
        q = f"?start_us={a / 1000}&end_us={b / 1000}" + (f"&tracks={','.join(str(track_of[k]) for k in keys)}" if picked else "")
        agg = v.json(f"/api/run/{rid}/timeline/aggregate{q}")
        want = expected_totals([threads[k] for k in keys], a, b)
        assert agg_rows(agg) == want
        assert agg["slices"] == sum(r["count"] for r in want.values())
        for k in ("total_ns", "self_ns", "in_range_ns", "self_in_range_ns"):
            assert agg[k] == sum(r[k] for r in want.values())
        assert sorted(agg["tracks"]) == sorted(track_of[k] for k in keys)
    cut = agg_rows(v.json(f"/api/run/{rid}/timeline/aggregate?start_us=360&end_us=435"))
    assert cut["gemm_b"] == {"count": 1, "total_ns": 30_000, "self_ns": 30_000, "in_range_ns": 20_000,
                             "self_in_range_ns": 20_000}
    assert cut["marker"]["count"] == 1 and cut["marker"]["total_ns"] == 0
    # ranges of ids, and the bad ones
    ids = sorted(track_of.values())
    both = v.json(f"/api/run/{rid}/timeline/aggregate?start_us=0&end_us=2000&tracks={ids[0]}-{ids[-1]}")
    assert both["tracks"] == ids
    v.json(f"/api/run/{rid}/timeline/aggregate?start_us=5&end_us=5", 400)
    v.json(f"/api/run/{rid}/timeline/aggregate?start_us=0&end_us=1&tracks=1,x", 400)
    v.json(f"/api/run/{rid}/timeline/aggregate?start_us=0&end_us=1&tracks=3-1", 400)
    assert "no track" in v.json(f"/api/run/{rid}/timeline/aggregate?start_us=0&end_us=1&tracks=9999", 404)["error"]
    v.json(f"/api/run/{rid}/timeline/nope", 404)


def test_event_details_name_the_hlo_instruction(cpu_logdir, serve):
    """An XLA:CPU thunk's details carry its self time, its flow to its "end:" event, and the HLO
    instruction decoded from the metadata plane, which agrees with the ops table."""
    v = serve(cpu_logdir)
    rid = v.run_id()
    window = v.json(f"/api/run/{rid}/timeline?px=1000000")
    ops = {(o["module"], o["name"]): o for o in v.json(f"/api/run/{rid}/ops")["ops"]}
    checked = 0
    for t in window["tracks"]:
        for e in t["events"]:
            ev = v.json(f"/api/run/{rid}/event?track={t['id']}&index={e[4]}")
            assert ev["name"] == window["names"][e[2]] and ev["dur_us"] == pytest.approx(e[1], abs=1e-3)
            assert 0 <= ev["self_us"] <= ev["dur_us"] + 1e-9
            if e[3] + 1 == t["levels"]:  # nothing nests under the deepest events
                assert ev["self_us"] == pytest.approx(ev["dur_us"], abs=1e-3)
            args, hlo = ev["args"], ev["hlo"]
            if "hlo_op" not in args:
                continue
            assert hlo is not None and hlo["name"] == args["hlo_op"] and hlo["module"] == args["hlo_module"]
            assert hlo["program_id"] == args["program_id"]
            op = ops[(args["hlo_module"], args["hlo_op"])]
            for k in ("category", "op_name", "scope", "source", "function"):
                assert hlo[k] == op[k], k
            assert hlo["opcode"] and hlo["stack"]
            if not hlo["stack"][0]["library"]:  # the innermost frame is the user's: the op's source line
                assert f"{hlo['stack'][0]['file']}:{hlo['stack'][0]['line']}" == op["source"]
            assert hlo["text"].startswith(f"%{hlo['name']} = ") and f" {hlo['opcode']}(" in hlo["text"]
            if hlo["opcode"] == "dot":
                assert hlo["category"] == "matmul" and hlo["flops"] == 2 * 64 * 128 * 128  # (64,128) x (128,128)
                # the weight gradient: x^T (64,128) contracted with g (64,128) over the batch
                assert re.fullmatch(rf"%{re.escape(hlo['name'])} = f32\[128,128\] dot\(f32\[64,128\] %[\w.-]+, "
                                    r"f32\[64,128\] %[\w.-]+\)", hlo["text"]), hlo["text"]
            checked += 1
    assert checked >= 6
    # A step of the Steps row: its breakdown, which sums to its duration.
    steps = next(t for t in window["tracks"] if t["thread"] == "Steps")
    ev = v.json(f"/api/run/{rid}/event?track={steps['id']}&index=1")
    parts = sum(v for k, v in ev["args"].items() if k.endswith("_us") and not k.startswith("issued_"))
    assert ev["name"] == "step 2" and ev["args"]["step_num"] == 2 and parts == pytest.approx(ev["dur_us"], abs=0.01)
    # The arrows of one event name the other end.
    thunk = next((t, e) for t in window["tracks"] for e in t["events"] if window["names"][e[2]].startswith("end: "))
    ev = v.json(f"/api/run/{rid}/event?track={thunk[0]['id']}&index={thunk[1][4]}")
    (flow,) = [f for f in ev["flows"] if f["dir"] == "in"]
    src = v.json(f"/api/run/{rid}/event?track={flow['track']}&index={flow['index']}")
    assert "end: " + flow["name"] == ev["name"] == "end: " + src["name"]
    assert flow["us"] == pytest.approx(src["start_us"] + src["dur_us"], abs=1e-3)  # it leaves at the op's end
    assert any(f["dir"] == "out" and (f["track"], f["index"]) == (thunk[0]["id"], thunk[1][4]) for f in src["flows"])


def test_event_details_on_real_gpu_and_tpu_captures(tmp_path, serve):
    """Newer JAX names its metadata "jit_dot(5)" with no program_id stat (MI300); libtpu names an op
    by its HLO text and its module by an unsigned 64-bit program id (v6e): both find their HLO."""
    log_dir = tmp_path / "logs"
    for name in ("mi300_jax08_gemm", "jax_tpu_v6e_4core_inference"):
        run = log_dir / "plugins" / "profile" / name
        run.mkdir(parents=True)
        (run / "host.xplane.pb.gz").write_bytes((REAL / f"{name}.xplane.pb.gz").read_bytes())
    v = serve(log_dir)
    gpu, tpu = v.run_id("mi300_jax08_gemm"), v.run_id("jax_tpu_v6e_4core_inference")
    window = v.json(f"/api/run/{gpu}/timeline?px=1000000")
    # a row per compiled program (program_id None where a module name has one program)
    ops = {(o["module"], o["name"], o["program_id"]): o for o in v.json(f"/api/run/{gpu}/ops")["ops"]}
    kernels = [(t, e) for t in window["tracks"] if t["thread"].startswith("Stream") for e in t["events"]]
    details = [v.json(f"/api/run/{gpu}/event?track={t['id']}&index={e[4]}") for t, e in kernels[:40]]
    details = [ev for ev in details if "hlo_op" in ev["args"]]
    first = {}  # module name -> its first compilation, the one the analysis matches by name
    for ev in details:
        first[ev["args"]["hlo_module"]] = min(first.get(ev["args"]["hlo_module"], 2**64), ev["args"]["program_id"])
    later = 0
    for ev in details:
        h, args = ev["hlo"], ev["args"]
        assert (h["module"], h["name"], h["program_id"]) == (args["hlo_module"], args["hlo_op"], args["program_id"])
        assert h["opcode"] and h["category"]
        op = ops.get((args["hlo_module"], args["hlo_op"], args["program_id"])) or ops[(args["hlo_module"], args["hlo_op"], None)]
        if h["op_name"]:  # the same instruction of the same program
            assert (h["op_name"], h["source"]) == (op["op_name"], op["source"])
        later += args["program_id"] != first[args["hlo_module"]]
    # Recompiled modules ("jit_dot(21)" after "jit_dot(5)") are found by their own program id.
    assert len(details) >= 5 and later >= 1
    # the XLA Ops row's merged records name their op too
    xla_ops = next(t for t in window["tracks"] if t["thread"] == "XLA Ops")
    ev = v.json(f"/api/run/{gpu}/event?track={xla_ops['id']}&index=0")
    assert ev["hlo"]["name"] == ev["name"] and ev["hlo"]["module"] == ev["args"]["hlo_module"]
    window = v.json(f"/api/run/{tpu}/timeline?start_ms=0&end_ms=30000&px=1000")
    t = next(t for t in window["tracks"] if t["thread"] == "XLA Ops")
    e = next(e for e in t["events"] if e[2] >= 0 and window["names"][e[2]].startswith("%"))
    ev = v.json(f"/api/run/{tpu}/event?track={t['id']}&index={e[4]}")
    name = window["names"][e[2]]
    assert ev["hlo"]["name"] == name[1:name.index(" ")] and ev["hlo"]["opcode"]
    assert ev["hlo"]["program_id"] == ev["args"]["program_id"] % 2**64 and ev["hlo"]["program_id"] >= 2**63


# ---- the page: ruler, zoom, URL --------------------------------------------------------------------------------

def open_timeline(driver: webdriver.Chrome, url: str) -> None:
    driver.get("about:blank")  # a fresh page: a mere hash change would keep the old one's state
    driver.get(url)
    wait_for(driver, "#tl-status", "events")


def check_ticks(driver: webdriver.Chrome) -> dict:
    """The ruler's ticks: inside the window, on multiples of a 1-2-5 step, placed where their time
    is, and labelled with it in the unit the step suggests."""
    st = js(driver, "({ ticks: TL.ticks, start: TL.start, end: TL.end, W: tlPlotWidth() })")
    ticks, start, end, width = st["ticks"], st["start"], st["end"], st["W"]
    assert len(ticks) >= 3
    step = ticks[1]["ms"] - ticks[0]["ms"]
    mantissa = step / 10 ** __import__("math").floor(__import__("math").log10(step) + 1e-9)
    assert min(abs(mantissa - m) for m in (1, 2, 5)) < 1e-6
    unit = ticks[0]["label"].split()[-1]
    assert step / UNITS_MS[unit] >= 0.1 - 1e-9 and step / UNITS_MS[unit] < 100
    for a, b in zip(ticks, ticks[1:]):
        assert b["ms"] - a["ms"] == pytest.approx(step, rel=1e-6)
    for t in ticks:
        assert start - 1e-9 <= t["ms"] < end
        assert t["x"] == pytest.approx((t["ms"] - start) / (end - start) * width, abs=1e-6)
        value, u = t["label"].replace(",", "").split()
        assert u == unit and float(value) * UNITS_MS[u] == pytest.approx(t["ms"], abs=step * 1e-6)
    # the corner shows the window's ends, relative to the capture's start
    text = driver.find_element(By.ID, "tl-range").text
    m = re.fullmatch(r"([\d,.]+) – ([\d,.]+) (s|ms|µs|ns)", text)
    assert m, text
    f = UNITS_MS[m.group(3)]
    lo, hi = (float(m.group(i).replace(",", "")) * f for i in (1, 2))
    assert lo == pytest.approx(start, abs=(end - start) * 1e-3) and hi == pytest.approx(end, abs=(end - start) * 1e-3)
    return {"step": step, "unit": unit}


def test_ruler_follows_the_window_and_keys_move_it(server, browser):
    open_timeline(browser, server + "#/timeline")
    assert canvas_ink(browser) > 500
    full = check_ticks(browser)
    shot(browser, "timeline_full")
    body = browser.find_element(By.TAG_NAME, "body")
    (s0, e0) = js(browser, "[TL.start, TL.end]")
    body.send_keys("w")  # zoom in at the centre (the pointer is not on the plot): 80% of the width
    WebDriverWait(browser, 10).until(lambda d: window_of(d) != (0.0, 0.0) and window_of(d)[1] - window_of(d)[0] < e0 - s0)
    s1, e1 = window_of(browser)
    assert e1 - s1 == pytest.approx(0.8 * (e0 - s0), rel=1e-6) and (s1 + e1) / 2 == pytest.approx((s0 + e0) / 2, rel=1e-6)
    for _ in range(14):
        body.send_keys("w")
    WebDriverWait(browser, 10).until(lambda d: window_of(d)[1] - window_of(d)[0] < (e0 - s0) * 0.8 ** 14)
    # the answer for this window has arrived (its ends are written to the nanosecond)
    WebDriverWait(browser, 10).until(lambda d: js(d, "TL.data && Math.abs(TL.data.end_ms - TL.end) < 1e-6"))
    zoomed = check_ticks(browser)
    # (the units themselves follow the steps, checked above: the capture's length decides them)
    assert zoomed["step"] < full["step"] / 10 and UNITS_MS[zoomed["unit"]] <= UNITS_MS[full["unit"]]
    s2, e2 = window_of(browser)
    body.send_keys("d")  # pan right by a fifth of the width
    WebDriverWait(browser, 10).until(lambda d: window_of(d)[0] > s2)
    assert window_of(browser)[0] - s2 == pytest.approx(0.2 * (e2 - s2), rel=1e-6)
    body.send_keys("a")
    WebDriverWait(browser, 10).until(lambda d: window_of(d)[0] == pytest.approx(s2, rel=1e-9))
    body.send_keys("s")  # and out again
    WebDriverWait(browser, 10).until(lambda d: window_of(d)[1] - window_of(d)[0] == pytest.approx((e2 - s2) * 1.25, rel=1e-6))
    shot(browser, "timeline_zoomed")
    # The window is in the URL: opening it again shows the same window.
    zoomed_window, url = window_of(browser), browser.current_url
    open_timeline(browser, url)
    assert window_of(browser) == zoomed_window and js(browser, "[TL.start, TL.end]") == list(zoomed_window)
    assert canvas_ink(browser) > 0
    # W zooms at the pointer when it is on the plot: the time under it stays under it.
    body = browser.find_element(By.TAG_NAME, "body")
    W, (a, b) = js(browser, "tlPlotWidth()"), js(browser, "[TL.start, TL.end]")
    el = browser.find_element(By.ID, "timeline")
    ActionChains(browser).move_to_element_with_offset(el, int(W * 0.25 - el.rect["width"] / 2), 0).perform()
    under = js(browser, "TL.mouse")
    assert under == pytest.approx(a + 0.25 * (b - a), abs=(b - a) / W)
    body.send_keys("w")
    WebDriverWait(browser, 10).until(lambda d: window_of(d)[1] - window_of(d)[0] < (b - a) * 0.9)
    c, e = window_of(browser)
    assert (under - c) / (e - c) == pytest.approx((under - a) / (b - a), rel=1e-6) and e - c == pytest.approx(0.8 * (b - a), rel=1e-6)
    # The overview's "Open in Timeline" link names the window in microseconds: read too.
    open_timeline(browser, server + "#/timeline?start_us=100&end_us=300")
    assert js(browser, "[TL.start, TL.end]") == [0.1, 0.3]


def slice_hit(driver: webdriver.Chrome, name: str) -> dict:
    hit = js(driver, f"TL.hits.find((h) => !h.merged && h.name === {json.dumps(name)})")
    assert hit, f"no slice {name} drawn"
    return hit


def test_a_slice_starting_before_the_window_is_clipped(server, browser):
    open_timeline(browser, server + "#/timeline")
    train = slice_hit(browser, "train")  # step 1's outermost python slice
    s, d = train["e"][0] / 1000, train["e"][1] / 1000  # ms
    start, end = s + d / 2, s + 1.5 * d  # the window starts halfway into it
    open_timeline(browser, server + f"#/timeline?start={start}&end={end}")
    hit = js(browser, f"TL.hits.find((h) => h.track.id === {train['track']['id']} && h.e[4] === {train['e'][4]})")
    W = js(browser, "tlPlotWidth()")
    visible = (s + d - start) / (end - start) * W  # half the slice: a third of the plot
    assert hit["x"] == 0 and hit["w"] == pytest.approx(visible, abs=1.0) and hit["w"] < W * 0.6
    # On the canvas: the slice's colour at the left edge, and not just past its end (the gap to step 2).
    colour = js(browser, f"""(() => {{ const c = document.getElementById('timeline'), g = c.getContext('2d'),
        r = devicePixelRatio, px = (x) => Array.from(g.getImageData(Math.round(x * r), Math.round(({hit['y']} + 8) * r), 1, 1).data);
        return [px(2), px({visible} - 3), px({visible} + 3)]; }})()""")
    assert colour[0] == colour[1] and colour[2] != colour[0]


# ---- track names, groups and the Steps row ----------------------------------------------------------------

def test_tracks_have_readable_names_and_groups_collapse(server, browser):
    open_timeline(browser, server + "#/timeline")
    assert js(browser, "tlShortThread('tf_XLAEigen/-5641046492388053131')") == "XLAEigen"
    assert js(browser, "tlShortThread('tf_XLAEigen/77 (overlap 2)')") == "XLAEigen (overlap 2)"
    labels = {e.text: e.get_attribute("title") for e in browser.find_elements(By.CSS_SELECTOR, ".tl-track")}
    xla = [t for t in js(browser, "TL.tracks") if t["thread"].startswith("tf_XLA")]
    short = re.sub(r"/-?\d+$", "", xla[0]["thread"][3:])
    # the short name, numbered when threads share it; the full name and the track id on hover
    want = [short] if len(xla) == 1 else [f"{short} #{k}" for k in range(1, len(xla) + 1)]
    assert [k for k in labels if k.startswith(short)] == want
    for label, t in zip(want, xla):
        assert labels[label] == f"{t['thread']}\ntrack {t['id']} · /host:CPU"
    # The CPU profile's Steps row, derived as `jaxprof export` derives it, first in its process.
    rows = js(browser, "TL.rows.map((r) => [r.kind, r.label])")
    assert rows[0] == ["group", "/host:CPU"] and rows[1] == ["track", "Steps"]
    assert "Steps" in labels and js(browser, "TL.tracks.find((t) => t.thread === 'Steps').kind") == "steps"
    steps = js(browser, "TL.byTrack.get(TL.tracks.find((t) => t.thread === 'Steps').id).map((e) => TL.data.names[e[2]])")
    assert steps == ["step 1", "step 2", "step 3"]
    # The group header collapses its tracks: rows, labels and canvas height go; a second click restores.
    height = js(browser, "document.getElementById('timeline').clientHeight")
    browser.find_element(By.CSS_SELECTOR, ".tl-group").click()
    assert js(browser, "TL.rows.map((r) => r.kind)") == ["group"] and not browser.find_elements(By.CSS_SELECTOR, ".tl-track")
    assert js(browser, "document.getElementById('timeline').clientHeight") < height
    assert "▸" in browser.find_element(By.CSS_SELECTOR, ".tl-group").text
    browser.find_element(By.CSS_SELECTOR, ".tl-group").click()
    assert len(browser.find_elements(By.CSS_SELECTOR, ".tl-track")) == len(js(browser, "TL.tracks"))
    assert js(browser, "document.getElementById('timeline').clientHeight") == height


# ---- range selection ---------------------------------------------------------------------------------------

def drag(driver: webdriver.Chrome, element_id: str, x0: float, y0: float, x1: float, y1: float, shift: bool) -> None:
    """A real mouse drag from (x0, y0) to (x1, y1), CSS pixels from the element's top left."""
    el = driver.find_element(By.ID, element_id)
    r = el.rect
    dx, dy = int((x1 - x0) / 2), int((y1 - y0) / 2)
    ac = ActionChains(driver).move_to_element_with_offset(el, int(x0 - r["width"] / 2), int(y0 - r["height"] / 2))
    if shift:
        ac = ac.key_down(Keys.SHIFT)
    ac = ac.click_and_hold().move_by_offset(dx, dy).move_by_offset(dx, dy)
    ac = ac.release()
    if shift:
        ac = ac.key_up(Keys.SHIFT)
    ac.perform()


def test_range_selection_totals_equal_the_api_and_the_exported_events(server, browser, cpu_export):
    open_timeline(browser, server + "#/timeline")
    rows = {r["label"]: r for r in js(browser, "TL.rows.map((r) => ({ label: r.label, y: r.y, h: r.h, id: r.t && r.t.id }))")}
    W = js(browser, "tlPlotWidth()")
    py, xla = rows["python"], next(r for k, r in rows.items() if k.startswith("XLA"))
    # Shift+drag from the python row down to the XLA thread's row, from the middle of step 1's
    # "train" slice to the middle of step 2's: slices cut at both ends, and whole ones between.
    trains = js(browser, "TL.hits.filter((h) => h.name === 'train').map((h) => h.x + h.w / 2)")
    assert len(trains) >= 2 and trains[1] - trains[0] > 20
    drag(browser, "timeline", trains[0], py["y"] + 5, trains[1], xla["y"] + 5, shift=True)
    table = wait_for(browser, "#tl-agg-table")
    sel = js(browser, "TL.sel")
    assert sel["kind"] == "range" and sel["tracks"] == sorted([py["id"], xla["id"]])
    assert f"sel=range%3A{sel['start']}%3A{sel['end']}" in js(browser, "location.hash")
    # The table is the API's answer for that range...
    agg = js(browser, "TL.agg")
    start_us, end_us = f"{sel['start'] * 1000:.3f}", f"{sel['end'] * 1000:.3f}"
    api = json.loads(js(browser, f"""fetch(`/api/run/${{encodeURIComponent(state.run)}}/timeline/aggregate?start_us={start_us}&end_us={end_us}&tracks={py['id']},{xla['id']}`).then((r) => r.text())"""))
    assert agg == api and agg["slices"] > 5
    # ... which is exact: the same sums from the exported trace's raw events.
    threads = exported_threads(cpu_export)
    names = {py["id"]: "python", xla["id"]: js(browser, f"TL.tracks.find((t) => t.id === {xla['id']}).thread")}
    want = expected_totals([threads[("/host:CPU", names[i])] for i in sel["tracks"]], ns(float(start_us)), ns(float(end_us)))
    assert agg_rows(agg) == want
    # The table shows those numbers, in microseconds with every nanosecond digit.
    first = [td.text for td in table.find_elements(By.CSS_SELECTOR, "tbody tr")[0].find_elements(By.TAG_NAME, "td")]
    top = max(agg["rows"], key=lambda r: r["total_ns"])
    assert first[0] == top["name"] and first[1] == str(top["count"]) and first[2] == f"{top['total_ns'] / 1000:,.3f}"
    foot = [c.text for c in table.find_elements(By.CSS_SELECTOR, "tfoot th, tfoot td")]
    assert foot[1] == f"{agg['slices']:,}" and foot[2] == f"{agg['total_ns'] / 1000:,.3f}" and foot[5] == f"{agg['self_in_range_ns'] / 1000:,.3f}"
    shot(browser, "timeline_range")
    # Sortable: by count, then by name.
    browser.find_element(By.CSS_SELECTOR, "#tl-agg-table th[data-key='count']").click()
    counts = [int(tr.find_elements(By.TAG_NAME, "td")[1].text.replace(",", ""))
              for tr in browser.find_elements(By.CSS_SELECTOR, "#tl-agg-table tbody tr")]
    assert counts == sorted(counts, reverse=True)
    browser.find_element(By.CSS_SELECTOR, "#tl-agg-table th[data-key='name']").click()
    listed = [tr.find_element(By.TAG_NAME, "td").text for tr in browser.find_elements(By.CSS_SELECTOR, "#tl-agg-table tbody tr")]
    assert listed == sorted(listed)
    # The selection is in the URL: reloading shows the same range and table.
    open_timeline(browser, browser.current_url)
    wait_for(browser, "#tl-agg-table")
    assert js(browser, "TL.agg") == api
    # `f` fits the window to the range; a drag on the ruler selects every track.
    browser.find_element(By.TAG_NAME, "body").send_keys("f")
    WebDriverWait(browser, 10).until(lambda d: window_of(d)[0] == pytest.approx(sel["start"], rel=1e-9))
    assert window_of(browser)[1] == pytest.approx(sel["end"], rel=1e-9)
    drag(browser, "tl-axis", W * 0.1, 15, W * 0.9, 15, shift=False)
    WebDriverWait(browser, 10).until(lambda d: js(d, "TL.agg && TL.sel.tracks === null"))
    assert sorted(js(browser, "TL.agg.tracks")) == sorted(t["id"] for t in js(browser, "TL.tracks"))


# ---- the details panel, marks, back and forward -------------------------------------------------------------

def click_canvas(driver: webdriver.Chrome, x: float, y: float) -> None:
    el = driver.find_element(By.ID, "timeline")
    r = el.rect
    ActionChains(driver).move_to_element_with_offset(el, int(x - r["width"] / 2), int(y - r["height"] / 2)).click().perform()


def test_details_panel_marks_and_history(server, browser, cpu_logdir):
    open_timeline(browser, server + "#/timeline")
    dot = js(browser, "TL.hits.find((h) => !h.merged && /^dot_general/.test(h.name))")
    click_canvas(browser, dot["x"] + min(3, dot["w"] / 2), dot["y"] + 6)
    wait_for(browser, "#tl-d-opcode")
    ev = js(browser, "TL.detail")
    assert ev["name"] == dot["name"] and ev["track"] == dot["track"]["id"] and ev["index"] == dot["e"][4]
    op = next(o for o in json.loads(js(browser, "fetch(`/api/run/${encodeURIComponent(state.run)}/ops`).then((r) => r.text())"))["ops"]
              if o["name"] == ev["args"]["hlo_op"])
    text = lambda i: browser.find_element(By.ID, i).text  # noqa: E731
    assert text("tl-d-name") == ev["name"]
    assert text("tl-d-category") == op["category"] == "matmul"
    assert text("tl-d-scope") == op["scope"] and text("tl-d-op-name") == op["op_name"]
    assert text("tl-d-source").startswith(op["source"]) and re.search(r"conftest\.py:\d+", op["source"])
    assert text("tl-d-opcode") == "dot" and text("tl-d-module") == op["module"] == ev["args"]["hlo_module"]
    assert text("tl-d-hlo-text") == ev["hlo"]["text"] and ev["hlo"]["text"].startswith(f"%{ev['hlo']['name']} = f32[")
    dur, self_ = (js(browser, f"tlDur({ev[k]} / 1000)") for k in ("dur_us", "self_us"))
    assert text("tl-d-dur") == dur and text("tl-d-self") == self_ and ev["self_us"] <= ev["dur_us"]
    shot(browser, "timeline_details")
    raw = browser.find_element(By.ID, "tl-d-raw")
    assert raw.get_attribute("open") is None and "hlo_op" not in raw.text  # folded
    raw.find_element(By.TAG_NAME, "summary").click()
    assert "hlo_op" in raw.text and "run_id" in raw.text
    assert f"sel=slice%3A{ev['track']}%3A{ev['index']}" in js(browser, "location.hash")
    # `f` fits the window to the slice (5% either side), `m` marks it: a band that stays.
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("f")
    s, e = ev["start_us"] / 1000, (ev["start_us"] + ev["dur_us"]) / 1000
    WebDriverWait(browser, 10).until(lambda d: window_of(d)[0] == pytest.approx(s - 0.05 * (e - s), rel=1e-6))
    body.send_keys("m")
    WebDriverWait(browser, 10).until(lambda d: "marks=" in js(d, "location.hash"))
    assert js(browser, "TL.marks") == [{"start": s, "end": e}]
    # Reload: window, selection, its panel and the mark come back.
    url, fitted = browser.current_url, window_of(browser)
    open_timeline(browser, url)
    wait_for(browser, "#tl-d-opcode")
    assert window_of(browser) == fitted and js(browser, "TL.marks") == [{"start": s, "end": e}]
    assert js(browser, "[TL.sel.track, TL.sel.index]") == [ev["track"], ev["index"]]
    # A second selection is a history entry: back restores the first one, forward the second.
    other = js(browser, "TL.hits.find((h) => !h.merged && h.track.id !== TL.sel.track)")  # a step, say
    click_canvas(browser, other["x"] + other["w"] / 2, other["y"] + 6)
    picked = lambda d: js(d, "TL.sel && [TL.sel.track, TL.sel.index]")  # noqa: E731
    WebDriverWait(browser, 10).until(lambda d: picked(d) == [other["track"]["id"], other["e"][4]])
    wait_for(browser, "#tl-d-name", other["name"])
    browser.back()
    WebDriverWait(browser, 10).until(lambda d: picked(d) == [ev["track"], ev["index"]])
    wait_for(browser, "#tl-d-name", ev["name"])
    browser.forward()
    WebDriverWait(browser, 10).until(lambda d: picked(d) == [other["track"]["id"], other["e"][4]])
    # Escape clears the selection.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    WebDriverWait(browser, 10).until(lambda d: js(d, "TL.sel") is None)
    assert "sel=" not in js(browser, "location.hash") and not browser.find_elements(By.ID, "tl-d-name")


# ---- flows and hosts -------------------------------------------------------------------------------------------

def test_flows_are_off_until_asked_and_hosts_are_picked(hosts_server, browser):
    open_timeline(browser, hosts_server + "#/timeline")
    wait_for(browser, "#tl-status", "flows")
    assert js(browser, "TL.flows.length") == 6  # three launch -> kernel arrows per host, in the answer
    assert not js(browser, "TL.showFlows") and not browser.find_element(By.ID, "tl-flows").is_selected()
    assert js(browser, "TL.flowsDrawn") == 0  # none drawn by default
    # All hosts side by side, each under its header row, each plane under its own.
    assert js(browser, "TL.rows.filter((r) => r.kind === 'host').map((r) => r.header)") == ["host-a", "host-b"]
    assert js(browser, "new Set(TL.data.tracks.map((t) => t.host)).size") == 2
    assert js(browser, "TL.rows.filter((r) => r.kind === 'group').map((r) => r.label)") == [
        "/device:GPU:0", "/host:CPU", "/device:GPU:0", "/host:CPU"]
    picker = browser.find_element(By.ID, "host-pick")
    assert [o.text for o in picker.find_elements(By.TAG_NAME, "option")] == ["all hosts", "host-a", "host-b"]
    # The checkbox draws every arrow, ink of their own; off again, the same picture as before.
    without = canvas_ink(browser)
    browser.find_element(By.ID, "tl-flows").click()
    assert js(browser, "TL.showFlows") and js(browser, "TL.flowsDrawn") == 6 and canvas_ink(browser) > without
    shot(browser, "timeline_flows")
    browser.find_element(By.ID, "tl-flows").click()
    assert js(browser, "TL.flowsDrawn") == 0 and canvas_ink(browser) == without
    # A selected launch shows its own arrow with the checkbox off.
    launch = js(browser, "TL.hits.find((h) => h.name === 'cuLaunchKernel')")
    js(browser, f"tlSelect({{ kind: 'slice', track: {launch['track']['id']}, index: {launch['e'][4]} }}, true)")
    WebDriverWait(browser, 10).until(lambda d: js(d, "TL.detail !== null"))
    assert js(browser, "TL.flowsDrawn") == 1
    assert [f["dir"] for f in js(browser, "TL.detail.flows")] == ["out"]
    # Picking a host keeps its tracks and flows only, and the pick is in the URL.
    Select(picker).select_by_value("host-b")
    WebDriverWait(browser, 10).until(lambda d: js(d, "TL.data && new Set(TL.data.tracks.map((t) => t.host)).size") == 1)
    assert all(p.startswith("host-b: ") for p in js(browser, "TL.data.tracks.map((t) => t.process)"))
    assert js(browser, "TL.flows.length") == 3 and js(browser, "TL.rows.filter((r) => r.kind === 'host').length") == 0
    assert "host=host-b" in js(browser, "location.hash")
    shot(browser, "timeline_host_b")
    open_timeline(browser, browser.current_url)
    assert js(browser, "TL.data.tracks.every((t) => t.host === 'host-b')")
    assert Select(browser.find_element(By.ID, "host-pick")).first_selected_option.text == "host-b"


def test_hosts_are_aligned(straggler_server, browser):
    browser.get("about:blank")
    browser.get(straggler_server + "#/timeline")
    WebDriverWait(browser, 20).until(lambda d: js(d, "TL.data !== null"))
    assert js(browser, "TL.rows.filter((r) => r.kind === 'host').map((r) => r.header)") == ["a", "b"]
    ends = js(browser, """(() => { const out = {};
        for (const t of TL.data.tracks) for (const e of t.events) if (TL.data.names[e[2]] === "all-reduce.2")
          (out[t.host] = out[t.host] || []).push(e[0] + e[1]);
        return out; })()""")
    assert len(ends["a"]) == 6 and ends["a"] == pytest.approx(ends["b"])  # one instant on both hosts' clocks
    shot(browser, "timeline_hosts_aligned")


def test_dense_rows_are_a_busy_strip(dense_server, browser):
    """Zoomed out, a row of sub-pixel events is one shaded strip, as dark as the row is busy (half
    here), not a grey block: the same shade in every pixel column, and a click says how busy."""
    open_timeline(browser, dense_server + "#/timeline")
    assert js(browser, "TL.data.aggregated") == 200_000 and js(browser, "TL.data.returned_events") == 0
    hit = js(browser, "TL.hits[0]")
    assert hit["merged"] and hit["name"] == "50000 events merged, 50% busy"
    W = js(browser, "tlPlotWidth()")
    shades = js(browser, f"""(() => {{ const c = document.getElementById('timeline'), g = c.getContext('2d'), r = devicePixelRatio;
        const xs = [0.1, 0.3, 0.5, 0.7, 0.9].map((f) => Math.round({W} * f)).map((x) =>
          TL.ticks.some((t) => Math.abs(t.x - x) < 2) ? x + 4 : x);  // off the grid lines
        return xs.map((x) => Array.from(g.getImageData(x * r, Math.round(({hit['y']} + 8) * r), 1, 1).data)); }})()""")
    alpha = 0.12 + 0.88 * 8 / 15  # digit 8 over white
    want = [round(255 - (255 - c) * alpha) for c in (51, 65, 85)] + [255]
    for px in shades:
        assert px == pytest.approx(want, abs=2)
    click_canvas(browser, W / 2, hit["y"] + 8)
    assert "50% busy" in browser.find_element(By.ID, "tl-status").text
