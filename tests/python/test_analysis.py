"""The C analysis engine on real JAX CPU captures, checked against jax.profiler.ProfileData."""
from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxprof

from conftest import jaxprof_json, only_xplane, run_jaxprof

STEPS = [2, 3, 4, 5]


@jax.jit
def model_step(w: jax.Array, x: jax.Array) -> jax.Array:
    """A big matmul under a 'heavy' scope next to cheap work under 'light'."""
    with jax.named_scope("heavy"):
        h = jnp.tanh(x @ w @ w)
    with jax.named_scope("light"):
        l = x[:16, :16] @ w[:16, :16]
    return w - 1e-6 * (jnp.sum(h) + jnp.sum(l))


def busy_python(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    """Six steps, steps 2-5 captured by the Profiler, with host annotations of known weight."""
    log_dir = tmp_path_factory.mktemp("analysis")
    w, x = jnp.ones((384, 384)) * 1e-3, jnp.ones((256, 384))
    model_step(w, x).block_until_ready()  # compile outside the capture
    with jaxprof.Profiler(log_dir, start_step=STEPS[0], num_steps=len(STEPS), report=False) as prof:
        for i in range(6):
            with prof.step(i):
                with jaxprof.annotate("heavy_host"):
                    busy_python(0.004)
                with jaxprof.annotate("light_host"):
                    busy_python(0.0005)
                w = model_step(w, x)
            w.block_until_ready()
    return only_xplane(log_dir)


def reference_ops(path: Path) -> dict[tuple[str, str], tuple[int, float]]:
    """(hlo_module, hlo_op) -> (count, total ns), from JAX's own reader: XLA:CPU op events, each
    lasting until its linked "end: <op>" event when that ends later (asynchronous ops)."""
    ops: list[tuple[tuple[str, str], float, float, object]] = []
    ends: dict[object, float] = {}
    for plane in jax.profiler.ProfileData.from_file(str(path)).planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                end = event.start_ns + event.duration_ns
                if "hlo_op" in stats and "hlo_module" in stats:
                    key = (str(stats["hlo_module"]), str(stats["hlo_op"]))
                    ops.append((key, event.start_ns, end, stats.get("_p")))
                elif event.name.startswith("end: ") and "_c" in stats:
                    ends[stats["_c"]] = end
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for key, start, end, flow in ops:
        out[key][0] += 1
        out[key][1] += max(end, ends.get(flow, end)) - start if flow is not None else end - start
    return {k: (int(v[0]), v[1]) for k, v in out.items()}


def test_op_counts_and_totals_match_jax_reader(capture):
    expected = reference_ops(capture)
    ops = {(o["module"], o["name"]): o for o in jaxprof.load(capture).ops()}
    assert set(ops) == set(expected)
    assert len(expected) >= 2
    for key, (count, total_ns) in expected.items():
        assert ops[key]["count"] == count, key
        assert ops[key]["total_ms"] * 1e6 == pytest.approx(total_ns, rel=1e-3), key
        assert ops[key]["self_ms"] <= ops[key]["total_ms"] + 1e-9
        assert ops[key]["device"] == "/host:CPU"


def test_ops_carry_hlo_metadata(capture):
    ops = jaxprof.load(capture).ops()
    mine = [o for o in ops if o["module"] == "jit_model_step"]
    assert mine and all(o["op_name"].startswith("jit(model_step)/") for o in mine)
    assert any(o["scope"] == "model_step/heavy" and "matmul" in o["category"] for o in mine)
    assert sum(o["pct_time"] for o in ops) == pytest.approx(100, abs=0.01)


def test_steps_are_the_captured_steps_and_breakdown_sums(capture):
    profile = jaxprof.load(capture)
    steps = profile.steps()
    assert [s["step"] for s in steps] == STEPS
    assert profile.step_summary()["method"] == "StepTraceAnnotation"
    parts = ["compute_ms", "collective_ms", "h2d_ms", "d2h_ms", "d2d_ms", "compile_ms", "host_ms", "idle_ms"]
    for s in steps:
        assert sum(s[p] for p in parts) == pytest.approx(s["duration_ms"], rel=0.01)
        assert s["duration_ms"] > 4.5  # the annotated busy-waits alone take 4.5 ms
        assert s["compute_ms"] > 0 and s["ops"] > 0
    for a, b in zip(steps, steps[1:]):  # contiguous: a step ends where the next begins
        assert a["start_ms"] + a["duration_ms"] == pytest.approx(b["start_ms"], abs=1e-6)


def test_heavy_scopes_come_first(capture):
    scopes = jaxprof.load(capture).scopes()
    device = [s for s in scopes if s["kind"] == "device" and s["scope"].startswith("model_step/")]
    assert device[0]["scope"] == "model_step/heavy"
    assert device[0]["total_ms"] > 2 * next(s["total_ms"] for s in device if s["scope"] == "model_step/light")
    host = [s for s in scopes if s["kind"] == "host"]
    assert host[0]["scope"] == "heavy_host" and host[0]["count"] == len(STEPS)
    assert host[0]["total_ms"] >= 4 * len(STEPS)
    parent = next(s for s in scopes if s["kind"] == "device" and s["scope"] == "model_step")
    children = sum(s["total_ms"] for s in device if s["depth"] == 1)
    assert parent["total_ms"] == pytest.approx(parent["self_ms"] + children, rel=1e-6)


def test_report_text_fits_100_columns(capture, capsys):
    text = jaxprof.report(capture)
    assert capsys.readouterr().out == text
    assert "Steps: 4 (StepTraceAnnotation)" in text and "Top ops by self time" in text
    assert all(len(line) <= 100 for line in text.splitlines() if not line.startswith(("jaxprof report:", "      ")))


def test_cli_json_csv_and_views(capture):
    doc = jaxprof_json("ops", capture.parent, "--top", "2", "--sort", "count")
    assert doc["schema_version"] == 1 and doc["section"] == "ops" and doc["platform"] == "cpu"
    assert len(doc["ops"]) == 2 and doc["ops"][0]["count"] >= doc["ops"][1]["count"]
    report = jaxprof_json("report", capture)
    assert {"devices", "step_summary", "kpis", "ops", "steps", "scopes", "findings", "compiles"} <= set(report)
    everything = jaxprof_json("ops", capture)["ops"]
    only = jaxprof_json("ops", capture, "--filter", "light/")["ops"]
    assert only == [o for o in everything if "light/" in o["scope"] + "/" or "light/" in o["op_name"]]
    assert 0 < len(only) < len(everything)
    csv = run_jaxprof("steps", capture, "--csv")
    assert csv.returncode == 0
    assert csv.stdout.splitlines()[0].startswith("step,start_ms,duration_ms,compute_ms")
    assert len(csv.stdout.splitlines()) == 1 + len(STEPS)
    bad = run_jaxprof("ops", capture, "--sort", "nonsense")
    assert bad.returncode == 2 and "--sort: ops has no column 'nonsense' (columns: name, category," in bad.stderr
    assert run_jaxprof("report", capture, "--csv").returncode == 2


def test_log_dir_means_newest_run(capture):
    log_dir = capture.parents[4]  # <log>/step_N/plugins/profile/<run>/<host>.xplane.pb
    # the outputs name the run that was read, not only the directory given
    assert jaxprof_json("steps", log_dir)["path"] == str(capture.parent)
    assert run_jaxprof("report", log_dir).stdout.startswith(f"jaxprof report: {capture.parent}\n")
    assert len(jaxprof_json("steps", log_dir)["steps"]) == len(STEPS)


def test_profiler_logs_one_line_per_capture(tmp_path, step_fn, w0, caplog):
    with caplog.at_level(logging.INFO, logger="jaxprof"):
        with jaxprof.Profiler(tmp_path, start_step=1, num_steps=2) as prof:
            for i in range(4):
                with prof.step(i):
                    step_fn(w0)
    lines = [r.getMessage() for r in caplog.records]
    run = prof.captures[0].run_dir
    # whether two steps of a tiny loop hold a finding depends on their noise (findings' noise rule):
    # the line names the top one, or says there is none
    findings = jaxprof.load(run).findings()
    said = f"top finding [{findings[0]['severity']}] {findings[0]['title']}" if findings else "no finding"
    assert lines == [f"captured steps 1-2 (2 steps, mean {prof.captures[0].mean_step_ms:.2f} ms/step), "
                     f"{said} -> {run}"]


def test_profiler_full_report_on_request(tmp_path, step_fn, w0, caplog):
    with caplog.at_level(logging.INFO, logger="jaxprof"):
        with jaxprof.Profiler(tmp_path, start_step=1, num_steps=2, report="full") as prof:
            for i in range(4):
                with prof.step(i):
                    step_fn(w0)
    (message,) = [r.getMessage() for r in caplog.records]
    first, report = message.split("\n", 1)
    assert first.startswith("captured steps 1-2 (2 steps") and first.endswith(f" -> {prof.captures[0].run_dir}")
    assert report.startswith(f"jaxprof report: {prof.captures[0].run_dir}\n") and "Steps: 2 (StepTraceAnnotation)" in report
    with pytest.raises(ValueError, match="report must be"):
        jaxprof.Profiler(tmp_path, report="loud")
    with pytest.raises(ValueError, match="report must be"):
        jaxprof.ProfilerConfig(profile_report="loud").validate()


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        jaxprof.load(tmp_path / "missing")
    bad = tmp_path / "x.xplane.pb"
    bad.write_bytes(b"\x0a\x05ab")
    with pytest.raises(ValueError, match=r"x\.xplane\.pb.*byte"):
        jaxprof.load(bad)
    empty = tmp_path / "run" / "host.xplane.pb"
    empty.parent.mkdir()
    empty.write_bytes(b"\x0a\x00")  # one empty plane and no hostnames after it: a file cut short (issue 30)
    with pytest.raises(ValueError, match=r"host\.xplane\.pb: file ends at byte 2, right after plane 1: the file "
                                         r"looks truncated \(no hostnames field follows the planes\)"):
        jaxprof.load(empty)
    empty.write_bytes(b"\x0a\x00\x22\x04host")  # with its hostname: valid, nothing to analyse
    doc = json.loads(jaxprof.load(empty.parent).render("steps", "json"))
    assert doc["steps"] == [] and doc["step_summary"]["method"] == "none" and doc["hosts"] == ["host"]
