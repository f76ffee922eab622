"""Multi-host analysis on synthetic runs whose true timeline is known: clock alignment (collective
ends, wall clock, none), stragglers and waiting per host, the per-host tables, and the merged export.

The job: steps k = 0..5 start every 10 ms of true time. Each host computes, then enters an
all-reduce at `arrive` us into the step; the all-reduce ends on both hosts 500 us after the later
arrival. Host b arrives 6 ms late in steps 3 and 4. Host b's capture starts 1 ms after host a's
(its events are timed from its own start), and its wall clock runs 0.3 ms ahead.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pytest import approx

from conftest import jaxprof_json, run_jaxprof
from xplane_gen import Uint, XSpace

WALL_START_NS = 1_795_291_544_000_000_000
B_CAPTURE_US, B_WALL_SKEW_US = 1000, 300
SLOW_STEPS, SLOW_ARRIVE_US, ARRIVE_US = {3, 4}, 8000, 2000


def step_start_us(k: int) -> int:
    return 5000 + 10_000 * k


def host_space(name: str, *, collectives: bool = True, wall: bool = True) -> XSpace:
    b = name == "b"
    shift = B_CAPTURE_US if b else 0  # true time - own time
    space = XSpace([name])
    cpu = space.plane("/host:CPU")
    py = cpu.line("python", id=1)
    worker = cpu.line("tf_XLACpu/1", id=2)
    for k in range(6):
        t0 = step_start_us(k) - shift
        arrive = SLOW_ARRIVE_US if b and k in SLOW_STEPS else ARRIVE_US
        end = (SLOW_ARRIVE_US if k in SLOW_STEPS else ARRIVE_US) + 500
        py.span("train", t0, t0 + end + 100, {"_r": 1, "step_num": k})
        worker.span("dot.1", t0 + 100, t0 + 1500, {"hlo_op": "dot.1", "hlo_module": "jit_step", "run_id": k + 1})
        op = "all-reduce.2" if collectives else "fusion.3"
        worker.span(op, t0 + arrive, t0 + end, {"hlo_op": op, "hlo_module": "jit_step", "run_id": k + 1})
    if wall:
        start = WALL_START_NS + ((B_CAPTURE_US + B_WALL_SKEW_US) * 1000 if b else 0)
        space.plane("Task Environment").stats({"profile_start_time": Uint(start)})
    return space


def write_run(run: Path, **kw) -> Path:
    run.mkdir(parents=True)
    for name in ("a", "b"):
        host_space(name, **kw).write(run / f"{name}.xplane.pb")
    return run


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("hosts") / "run")


def by_host(doc: dict) -> dict[str, dict]:
    return {h["host"]: h for h in doc["host_stats"]}


def test_clocks_are_aligned_on_collective_ends_not_on_the_skewed_wall_clock(run):
    doc = jaxprof_json("hosts", run)
    assert doc["clock_method"].startswith("ends of the last collective of shared steps")
    a, b = by_host(doc)["a"], by_host(doc)["b"]
    assert (a["clock"], a["offset_ms"]) == ("reference", 0)
    # the wall clock says 1.3 ms; the collectives say 1.0 ms, exactly, in all six steps
    assert (b["clock"], b["offset_ms"], b["sync_steps"], b["sync_spread_ms"]) == ("collective ends", approx(1.0), 6, 0)
    # on the shared axis both hosts' steps start together
    starts = {(r["host"], r["step"]): r["start_ms"] for r in doc["host_steps"]}
    for k in range(6):
        assert starts[("a", k)] == approx(starts[("b", k)]) == approx(step_start_us(k) / 1000)


def test_the_late_host_is_the_straggler_of_its_slow_steps_only(run):
    doc = jaxprof_json("hosts", run)
    behind = (SLOW_ARRIVE_US + 500 - ARRIVE_US) - 500  # a's all-reduce minus b's
    assert doc["stragglers"] == [{"step": k, "host": "b", "behind_ms": approx(behind / 1000), "step_ms": approx(10.0)}  # steps run marker to marker
                                 for k in sorted(SLOW_STEPS)]
    a, b = by_host(doc)["a"], by_host(doc)["b"]
    assert (a["straggler_steps"], b["straggler_steps"]) == (0, 2)
    assert a["wait_ms"] == approx(2 * behind / 1000) and b["wait_ms"] == 0
    assert a["collective_ms"] == approx((4 * 500 + 2 * 6500) / 1000)
    assert b["collective_ms"] == approx(6 * 500 / 1000)
    assert a["top_op"] == "all-reduce.2" and b["top_op"] == "dot.1"
    rows = [r for r in doc["host_steps"] if r["straggler"]]
    assert [(r["step"], r["host"]) for r in rows] == [(3, "b"), (4, "b")]
    assert [op["name"] for op in doc["host_ops"]["b"]] == ["dot.1", "all-reduce.2"]


def test_the_report_says_how_clocks_were_aligned_and_names_the_straggler(run):
    out = run_jaxprof("report", str(run)).stdout
    assert "Hosts: 2, clocks aligned by ends of the last collective of shared steps" in out
    assert "stragglers step 3 b (+6.00 ms), step 4 b (+6.00 ms)" in out
    findings = jaxprof_json("findings", run)["findings"]
    straggler = next(f for f in findings if f["id"] == "straggler")
    assert straggler["evidence"].startswith("b was the straggler in 2 of 6 steps (3-4): the other hosts waited 6.0 ms")
    # the collective is mostly waiting for b: no "communication dominates" advice
    assert "dominant_op" not in [f["id"] for f in findings]
    text = run_jaxprof("hosts", str(run)).stdout
    assert re.search(r"^ +3 +10.00 ms +10.00 ms\* +6.00 ms$", text, re.M), text  # b held the others 6 ms
    assert "Top ops on b by self time" in text


def test_the_html_report_has_the_hosts_section(run, tmp_path):
    page = tmp_path / "report.html"
    assert run_jaxprof("report", str(run), "--html", str(page)).returncode == 0
    html = page.read_text()
    assert '<section id="hosts">' in html and "clocks aligned by ends of the last collective" in html
    assert html.count('<td class="n bad">10.00 ms</td>') == 2  # b's cells in steps 3 and 4


def test_hosts_csv_has_a_row_per_host_and_step(run):
    lines = run_jaxprof("hosts", str(run), "--csv").stdout.splitlines()
    assert lines[0].startswith("step,host,start_ms,duration_ms,")
    assert len(lines) == 1 + 12


def test_focusing_on_one_host_leaves_the_per_host_sections_empty(run):
    doc = jaxprof_json("report", run, "--host", "b")
    assert doc["hosts"] == ["b"] and doc["host_stats"] == [] and doc["stragglers"] == [] and doc["clock_method"] == ""
    assert "per-host analysis needs a run with a file per host" in run_jaxprof("hosts", str(run), "--host", "b").stdout


def test_without_collectives_the_wall_clock_places_the_hosts(tmp_path):
    doc = jaxprof_json("hosts", write_run(tmp_path / "run", collectives=False))
    assert doc["clock_method"].startswith("capture start times")
    b = by_host(doc)["b"]
    assert (b["clock"], b["offset_ms"], b["sync_steps"]) == ("wall clock", approx(1.3), 0)
    assert doc["stragglers"] == []


def test_without_start_times_or_collectives_the_captures_are_taken_to_start_together(tmp_path):
    doc = jaxprof_json("hosts", write_run(tmp_path / "run", collectives=False, wall=False))
    assert doc["clock_method"].startswith("none")
    assert {h["clock"] for h in doc["host_stats"]} == {"none"}
    assert {h["offset_ms"] for h in doc["host_stats"]} == {0}


def test_the_merged_export_has_both_hosts_aligned(run, tmp_path):
    out = tmp_path / "trace.json"
    assert run_jaxprof("export", str(run), "-o", str(out)).returncode == 0
    events = json.loads(out.read_text())["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    assert sorted(procs.values()) == ["a: /host:CPU", "b: /host:CPU"]
    ends: dict[str, list[float]] = {"a": [], "b": []}
    for e in events:
        if e.get("ph") == "X" and e["name"] == "all-reduce.2":
            ends[procs[e["pid"]][0]].append(e["ts"] + e["dur"])
    assert len(ends["a"]) == 6 and ends["a"] == approx(ends["b"])  # one instant on both hosts
    steps = {(procs[e["pid"]][0], e["name"]) for e in events if e.get("ph") == "X" and e["name"].startswith("step ")}
    assert steps == {(h, f"step {k}") for h in "ab" for k in range(6)}  # each host's own Steps row
