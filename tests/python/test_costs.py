"""Per-program costs and plausible rates (issue 31, items 6-11), against a truth jaxprof has no part in:
each compiled program's HLO printed by XLA's own parser and the raw events read with JAX's
ProfileData (tests/python/hlo_truth.py), XProf through tests/python/xprof_oracle.py, and the
devices' data sheets. On a real JAX CPU program and on the real captures in ../shared/captures.
"""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import pytest

import hlo_truth
from conftest import REAL_CAPTURES, jaxprof_json, only_xplane, run_jaxprof

REAL = REAL_CAPTURES
needs_captures = pytest.mark.skipif(not REAL.is_dir(), reason=f"real captures not found at {REAL} (JAXPROF_REAL_CAPTURES)")

GEMM = REAL / "mi300_jax08_gemm.xplane.pb.gz"
CONV = REAL / "mi300_jax08_conv.xplane.pb.gz"
TPU = REAL / "jax_tpu_v6e_4core_inference.xplane.pb.gz"
TRAINING = REAL / "te_fused_attn_934987a2fc2f.xplane.pb.gz"  # a loss and its gradient on an MI355X

# One jitted function called with two shapes: two compiled programs of the module name jit_mm.
TWO_PROGRAMS = """
import sys
import jax, jax.numpy as jnp

@jax.jit
def mm(a, b):
    return jnp.tanh(a @ b) + 1.0

small = (jnp.ones((64, 128)), jnp.ones((128, 32)))
large = (jnp.ones((256, 512)), jnp.ones((512, 128)))
mm(*small).block_until_ready()
mm(*large).block_until_ready()
jax.profiler.start_trace(sys.argv[1])
for _ in range(3):
    mm(*small).block_until_ready()
for _ in range(2):
    mm(*large).block_until_ready()
jax.profiler.stop_trace()
"""


class Rows(dict):
    """jaxprof's op rows by (module, program_id, name); program_id is null where the module's name
    has one program, so a truth key with the program finds that row too."""

    def __missing__(self, key: tuple[str, int | None, str]) -> dict[str, Any]:
        return self[(key[0], None, key[2])]


def rows_by_program(path: Path) -> Rows:
    return Rows({(o["module"], o["program_id"], o["name"]): o for o in jaxprof_json("ops", path)["ops"]})


def truth_by_program(path: Path) -> dict[tuple[str, int | None, str], tuple[float, float]]:
    """(module, program_id, op) -> (FLOPs, bytes) of one execution, from the HLO alone."""
    return {(p.module, p.program_id, n): (hlo_truth.flops(p, n), hlo_truth.nbytes(p, n))
            for p in hlo_truth.programs(path) for n in p.entry}


@pytest.fixture(scope="module")
def two_programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("two_programs")
    script = out / "two_programs.py"
    script.write_text(TWO_PROGRAMS)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    subprocess.run([sys.executable, str(script), str(out / "trace")], check=True, env=env, timeout=300)
    return only_xplane(out / "trace")


def test_two_programs_of_one_name_get_their_own_costs(two_programs: Path) -> None:
    """A jitted function run with two shapes: each program's ops are rows of their own whose FLOPs
    and bytes are that program's HLO's times its own executions (one cost applied to both was the
    bug: 64x off for one of them)."""
    truth = truth_by_program(two_programs)
    events = hlo_truth.op_events(two_programs)
    programs = {p.program_id for p in hlo_truth.programs(two_programs) if p.module == "jit_mm"}
    assert len(programs) == 2 and None not in programs
    rows = {k: v for k, v in rows_by_program(two_programs).items() if k[0] == "jit_mm"}
    assert {k[1] for k in rows} == programs
    small_program = min(programs, key=lambda p: truth_flops_of(truth, p))  # the one run 3 times
    dots = {}
    for key, row in rows.items():
        runs = len(events[key])
        assert row["count"] == runs == (3 if row["program_id"] == small_program else 2)
        flops, nbytes = truth[key]
        assert row["flops"] == pytest.approx(flops * runs, rel=1e-11)
        assert row["bytes"] == pytest.approx(nbytes * runs, rel=1e-11)
        assert row["total_ms"] * 1e3 == pytest.approx(sum(d for _, d in events[key]), abs=1e-3 * runs)
        if flops > nbytes:
            dots[row["program_id"]] = flops
    small, large = sorted(dots.values())
    assert (small, large) == (2 * 64 * 32 * 128, 2 * 256 * 128 * 512)  # the dot of each shape (JSON numbers carry 12 digits)


def truth_flops_of(truth: dict[tuple[str, int | None, str], tuple[float, float]], program: int | None) -> float:
    return sum(f for (m, p, _), (f, _) in truth.items() if m == "jit_mm" and p == program)


@needs_captures
def test_gemm_capture_costs_per_program() -> None:
    """The MI300 GEMM capture runs jit_dot's custom-call.1 in five programs of 2 to 550 GFLOP each
    (and wrapped_broadcast in nine): every (program, op) row has its own program's HLO cost per
    run and its own events' time, so its FLOP rate is the truth's (was 10 TFLOP/s for all)."""
    truth = truth_by_program(GEMM)
    events = hlo_truth.op_events(GEMM)
    rows = rows_by_program(GEMM)
    checked = 0
    for key, evs in events.items():
        row, (flops, nbytes) = rows[key], truth[key]
        runs = hlo_truth.executions(evs)
        secs = sum(d for _, d in evs) / 1e6
        assert row["count"] == len(evs)
        assert row["flops"] == pytest.approx(flops * runs, rel=1e-11)
        assert row["bytes"] == pytest.approx(nbytes * runs, rel=1e-11)
        assert row["gflops_per_s"] == pytest.approx(flops * runs / secs / 1e9, rel=1e-3)
        assert row["gbytes_per_s"] == pytest.approx(nbytes * runs / secs / 1e9, rel=1e-3)
        checked += 1
    gemm = sorted(r["gflops_per_s"] for (m, _, n), r in rows.items() if n == "custom-call.1")
    assert len(gemm) == 5 and checked == len(events) == 16  # 5 GEMM programs, 9 broadcasts, a gemm_fusion, a copy
    assert gemm[-1] > 800_000  # 0.9 PFLOP/s on the 550 GFLOP program, of a 1307 TFLOP/s peak
    text = run_jaxprof("ops", GEMM, "--filter", "custom-call").stdout  # text tells the programs apart
    assert sorted(int(line.split("(program ")[1].split(")")[0]) for line in text.splitlines()[1:]) == [21, 34, 49, 64, 79]


JAX_GPU = ["mi300_jax08_attention.xplane.pb.gz", "mi300_jax08_conv.xplane.pb.gz", "mi300_jax08_elementwise.xplane.pb.gz",
           "mi300_jax08_gemm.xplane.pb.gz", "mi300_jax_conv_minimal_legacy.xplane.pb.gz",
           "te_fused_attn_934987a2fc2f.xplane.pb.gz"]


@needs_captures
@pytest.mark.parametrize("name", JAX_GPU)
def test_every_program_op_costs_its_hlo(name: str) -> None:
    """On every JAX GPU capture, each (program, op) that ran: FLOPs and bytes per run are its own
    program's HLO's (library GEMMs and convolutions included, TransformerEngine's FFI calls at 0
    FLOPs and their whole output tuple), and the rates follow over the raw events' time."""
    truth = truth_by_program(REAL / name)
    rows = rows_by_program(REAL / name)
    events = hlo_truth.op_events(REAL / name)
    assert events
    for key, evs in events.items():
        row, (flops, nbytes) = rows[key], truth[key]
        runs = hlo_truth.executions(evs)
        assert (row["count"], row["flops"], row["bytes"]) == (
            len(evs), pytest.approx(flops * runs, rel=1e-11), pytest.approx(nbytes * runs, rel=1e-11)), key


@needs_captures
def test_library_convolution_counts_its_flops_once_per_run() -> None:
    """A cuDNN/MIOpen convolution custom-call: its FLOPs from its shapes, window and dimension
    numbers (valid positions, as XLA counts a convolution; the padded count is the bound), done
    once per execution although it runs two kernels (XProf applies them to each kernel: 2x)."""
    (key, evs), = [(k, v) for k, v in hlo_truth.op_events(CONV).items() if k[2] == "cudnn-conv.1"]
    program, = [p for p in hlo_truth.programs(CONV) if p.program_id == key[1]]
    per_run, padded = hlo_truth.flops(program, "cudnn-conv.1"), hlo_truth.conv_flops(program, "cudnn-conv.1", padded=True)
    assert per_run == 32_715_571_200 and padded == 36_609_720_320  # the 3.66e10 counts padding
    row = rows_by_program(CONV)[key]
    runs = hlo_truth.executions(evs)
    assert (row["count"], runs) == (len(evs), 40) and len(evs) == 79  # 40 GEMMs, 39 Im3d2Col with op stats
    assert row["flops"] == pytest.approx(per_run * runs, rel=1e-11)
    assert row["hlo_flops"] == row["flops"]
    secs = sum(d for _, d in evs) / 1e6
    assert row["gflops_per_s"] == pytest.approx(per_run * runs / secs / 1e9, rel=1e-3)


def device_stats(path: Path) -> dict[str, Any]:
    """The first device plane's own stats, read with ProfileData."""
    data = jax.profiler.ProfileData.from_serialized_xspace(gzip.decompress(path.read_bytes()))
    return next(dict(p.stats) for p in data.planes if p.name.startswith("/device:"))


@needs_captures
@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*.xplane.pb.gz") if not p.name.startswith("mangled")))
def test_no_rate_above_its_peak_is_rated_good(name: str) -> None:
    """Any share of a physical peak above 100 % is rated 'above peak' (never good) and raises
    rate_above_peak; every op past its roof says so (above_peak)."""
    report = jaxprof_json("report", REAL / name)
    for k in report["kpis"]:
        if k["name"] in ("memory bandwidth", "MFU") and k["value"] > 100:
            assert k["rating"] == "above peak", k
        if k["rating"] == "above peak":
            assert any(f["id"] == "rate_above_peak" for f in report["findings"])
    for o in jaxprof_json("ops", REAL / name)["ops"]:
        assert o["above_peak"] == (o["bound_by"] != "" and o["roof_pct"] > 100), o["name"]


@needs_captures
def test_a_peak_below_the_measured_rate_is_flagged_not_rated_good() -> None:
    """With a 1000 GB/s peak (below what the MI300's transposes move), the bandwidth KPI is
    'above peak', and rate_above_peak names the op furthest past its roof, its rate from the raw
    events and the HLO, and where the peak came from."""
    report = jaxprof_json("report", CONV, "--peak-gbps", "1000")
    bw, = [k for k in report["kpis"] if k["name"] == "memory bandwidth"]
    assert bw["value"] > 100 and bw["rating"] == "above peak"
    f, = [f for f in report["findings"] if f["id"] == "rate_above_peak"]
    (key, evs), = [(k, v) for k, v in hlo_truth.op_events(CONV).items() if k[2] == "input_transpose_fusion"]
    program, = [p for p in hlo_truth.programs(CONV) if p.program_id == key[1]]
    gbps = hlo_truth.nbytes(program, key[2]) * len(evs) / (sum(d for _, d in evs) / 1e6) / 1e9
    assert f"input_transpose_fusion (module jit_forward_3d_conv) at {gbps:.4g} GB/s = {gbps / 10:.0f}% of" in f["evidence"]
    assert "peak 1000 GB/s (peak from: flag)" in f["evidence"] and f["severity"] == "warning"
    above = [o["name"] for o in report["ops"] if o["above_peak"]]
    assert "input_transpose_fusion" in above


@needs_captures
def test_rocm_bandwidth_is_checked_against_the_data_sheet() -> None:
    """ROCm reports 2662.4 GB/s for an MI300X (gfx942, 304 CUs, 192 GB) rated 5.3 TB/s: the data
    sheet's peak is used and named; the memory bandwidth KPI was 124 % [good] on the conv capture."""
    stats = device_stats(CONV)
    assert (stats["compute_cap_major"], stats["compute_cap_minor"], stats["core_count"]) == (9, 4, 304)
    assert stats["memory_bandwidth"] == 2_662_400_000_000
    report = jaxprof_json("report", CONV)
    dev = report["devices"][0]
    assert dev["peak_gbps"] == 5300 and "MI300X data sheet" in dev["peak_source"]
    assert dev["peak_tflops"] == pytest.approx(304 * 2.1e9 * 2048 / 1e12)  # clock x CUs: 1307 TFLOP/s, the sheet's
    bw, = [k for k in report["kpis"] if k["name"] == "memory bandwidth"]
    assert 0 < bw["value"] < 100 and bw["rating"] != "good"


@needs_captures
def test_tpu_inference_utilization_is_the_duty_cycle_and_no_remat_advice() -> None:
    """Four v6e chips running inference: device utilization is each chip's busy share of its own
    activity window (XProf's duty cycle, 86.5 %), not 100 %; its memory advice names no backward
    pass, while a training capture's (a loss and its gradient) still suggests jax.checkpoint."""
    data = jax.profiler.ProfileData.from_serialized_xspace(gzip.decompress(TPU.read_bytes()))
    duty = []
    for plane in data.planes:
        if not plane.name.startswith("/device:TPU"):
            continue
        spans = sorted((e.start_ns, e.start_ns + e.duration_ns) for ln in plane.lines
                       if ln.name in ("XLA Ops",) for e in ln.events)
        busy, hi, lo0 = 0.0, -1.0, spans[0][0]
        for s, e in spans:
            if e > hi:
                busy += e - max(s, hi)
                hi = e
        duty.append(busy / (hi - lo0))
    truth = 100 * sum(duty) / len(duty)
    report = jaxprof_json("report", TPU)
    util, = [k for k in report["kpis"] if k["name"] == "device utilization"]
    assert util["value"] == pytest.approx(truth, abs=0.5) and 80 < util["value"] < 90
    memory, = [f for f in report["findings"] if f["id"] == "peak_temporaries"]
    assert "no backward pass" in memory["fix"] and "checkpoint" not in memory["fix"]
    training, = [f for f in jaxprof_json("report", TRAINING)["findings"] if f["id"] == "peak_temporaries"]
    assert "jax.checkpoint" in training["fix"]


@needs_captures
def test_async_halves_get_no_rates() -> None:
    """copy-start / copy-done time is a launch or a wait, not the copy: no GB/s (was 894 million)."""
    ops = jaxprof_json("ops", TPU)["ops"]
    halves = [o for o in ops if "copy-start" in o["name"] or "copy-done" in o["name"]]
    assert len(halves) == 12  # copy-start, copy-done and .1 to .5 of each
    for o in halves:
        assert o["gflops_per_s"] is None and o["gbytes_per_s"] is None and o["bound_by"] == ""
    assert all(o["gbytes_per_s"] is not None for o in ops if o not in halves)


@needs_captures
def test_kernels_without_an_xla_op_are_listed_apart() -> None:
    """Kernels that carry no hlo_op (ROCm's copyBuffer, an Im3d2Col launch) are not HLO ops: their
    rows say so (xla_op false), and the text report lists them apart from the top ops."""
    data = jax.profiler.ProfileData.from_serialized_xspace(gzip.decompress(CONV.read_bytes()))
    bare = {e.name for p in data.planes if p.name.startswith("/device:") for ln in p.lines for e in ln.events
            if "hlo_op" not in dict(e.stats) and "correlation_id" in dict(e.stats) and "memcpy" not in e.name.lower()}
    ops = jaxprof_json("ops", CONV)["ops"]
    apart = {o["name"] for o in ops if not o["xla_op"]}
    assert apart == bare and {"__amd_rocclr_copyBuffer.kd", "Im3d2Col.kd"} <= apart
    assert all(o["category"] == "kernel, no XLA op" for o in ops if not o["xla_op"])
    text = run_jaxprof("report", CONV).stdout
    top, rest = text.split("Top ops by self time\n", 1)[1].split("\nKernels without an XLA op (", 1)
    assert "__amd_rocclr_copyBuffer" not in top and "__amd_rocclr_copyBuffer" in rest.split("\n\n", 1)[0]
