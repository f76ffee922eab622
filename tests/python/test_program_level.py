"""Program level (issue 33, item 6): each op's dtype and the op time split by precision, the
rematerialised ops, the "wasted time" ranking, and each step as one program on the roofline.

The truth is read outside jaxprof: element types and op_names from the HLO as XLA's own parser
prints it (hlo_truth.py), op times from the raw events (jax.profiler.ProfileData), XLA's own
per-op FLOPs and bytes on the TPU capture from its event metadata (read here from the protobuf).
"""
from __future__ import annotations

import bisect
import collections
import gzip
import re
import struct
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import hlo_truth
from conftest import REAL_CAPTURES, jaxprof_json, only_xplane, profile_steps, run_jaxprof
from raw_events import raw_planes
from xplane_gen import HloComputation, HloInstruction, HloModule, Uint, XSpace

TPU = REAL_CAPTURES / "jax_tpu_v6e_4core_inference.xplane.pb.gz"
GEMM = REAL_CAPTURES / "mi300_jax08_gemm.xplane.pb.gz"
PEAKS = ("--peak-tflops", "0.2", "--peak-gbps", "20")  # CPU captures have no peaks of their own
PRECISION = {"bf16": "16-bit", "f16": "16-bit", "f32": "32-bit", "s8": "8-bit", "u8": "8-bit"}


def precision_of(dtype: str) -> str:
    if not dtype:
        return "unknown"
    return PRECISION.get(dtype, "8-bit" if dtype.startswith("f8") else "other")


# ---- the truth from the HLO text -------------------------------------------------------------------

def _op_name(ins: hlo_truth.Instr) -> str:
    m = re.search(r'op_name="([^"]*)"', ins.attrs)
    return m.group(1) if m else ""


def _first_dot(p: hlo_truth.Program, ins: hlo_truth.Instr, named: bool = False) -> hlo_truth.Instr | None:
    """A fusion's first fused dot or convolution (with an op_name when `named`)."""
    for n in p.computations.get(ins.calls or "", []):  # type: ignore[attr-defined]
        f = p.instrs[n]
        if f.opcode in ("dot", "convolution") and (not named or _op_name(f)):
            return f
    return None


def _left_dtype(p: hlo_truth.Program, ins: hlo_truth.Instr) -> str | None:
    if not ins.operands or ins.operands[0] not in p.instrs or not p.instrs[ins.operands[0]].shapes:
        return None
    return p.instrs[ins.operands[0]].shapes[0][0]


def truth_dtype(p: hlo_truth.Program, name: str) -> str:
    """The documented rule: a dot's, convolution's or custom call's left operand's type, a fusion's
    first fused dot's or convolution's left operand's, else the output's (a tuple's first array)."""
    ins = p.instrs[name]
    t = None
    if ins.opcode in ("dot", "convolution", "custom-call"):
        t = _left_dtype(p, ins)
    elif ins.opcode == "fusion" and (dot := _first_dot(p, ins)) is not None:
        t = _left_dtype(p, dot)
    return t or (ins.shapes[0][0] if ins.shapes else "")


def truth_remat(p: hlo_truth.Program, name: str) -> bool:
    """XLA's clone suffix, or jax.checkpoint's "rematted_computation" in the op_name the op reports
    (a fusion with a named dot reports the dot's)."""
    ins = p.instrs[name]
    if re.search(r"\.remat\d*(\.|$)", name):
        return True
    dot = _first_dot(p, ins, named=True) if ins.opcode == "fusion" else None
    return "rematted_computation" in _op_name(dot or ins)


def program_of(path: Path, module: str) -> hlo_truth.Program:
    progs = [p for p in hlo_truth.programs(path, metadata=True) if p.module == module]
    assert len(progs) == 1, [p.module for p in hlo_truth.programs(path)]
    return progs[0]


def raw_times_ms(path: Path, module: str) -> dict[str, float]:
    """Each op's summed event time in ms, from the raw events."""
    out: dict[str, float] = collections.defaultdict(float)
    for (mod, _pid, op), evs in hlo_truth.op_events(path).items():
        if mod == module:
            out[op] += sum(us for _, us in evs) / 1e3
    return dict(out)


def raw_runs(path: Path, module: str) -> dict[str, int]:
    """How often each op ran, from the raw events."""
    return {op: hlo_truth.executions(evs) for (mod, _pid, op), evs in hlo_truth.op_events(path).items()
            if mod == module}


# ---- captures made here ------------------------------------------------------------------------

@jax.jit
def mixed_step(a16, b16, a32, b32):
    """A bf16 and an f32 matmul in one program."""
    return jnp.tanh(a16 @ b16), jnp.tanh(a32 @ b32)


@jax.checkpoint
def _block(w, x):
    return jnp.tanh(jnp.sin(x @ w) @ w)


@jax.jit
def remat_grad(w, x):
    """The gradient of two jax.checkpoint-ed blocks: the backward pass recomputes their forward."""
    return jax.grad(lambda w, x: jnp.sum(_block(w, _block(w, x))))(w, x)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    k = jax.random.PRNGKey(0)
    a32, b32 = jax.random.normal(k, (256, 512)), jax.random.normal(k, (512, 256))
    a16, b16 = a32.astype(jnp.bfloat16), b32.astype(jnp.bfloat16)
    jax.block_until_ready(mixed_step(a16, b16, a32, b32))
    root = profile_steps(tmp_path_factory.mktemp("mixed"), lambda i: jax.block_until_ready(
        mixed_step(a16, b16, a32, b32)), 4)
    return only_xplane(root)


@pytest.fixture(scope="module")
def remat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w, x = jnp.ones((128, 128)) * 0.01, jnp.ones((64, 128))
    jax.block_until_ready(remat_grad(w, x))
    root = profile_steps(tmp_path_factory.mktemp("remat"), lambda i: jax.block_until_ready(remat_grad(w, x)), 3)
    return only_xplane(root)


# ---- dtype and the precision split ---------------------------------------------------------------

def test_dtype_and_precision_split_on_a_bf16_and_f32_program(mixed: Path) -> None:
    """Every op's dtype is the HLO rule's; the precision table's self time per class is the raw
    events' time of the ops of that class, and both 16-bit and 32-bit work are there."""
    doc = jaxprof_json("ops", mixed, "--top", "1000")
    p = program_of(mixed, "jit_mixed_step")
    ops = [o for o in doc["ops"] if o["module"] == "jit_mixed_step"]
    assert ops
    for o in ops:
        assert o["dtype"] == truth_dtype(p, o["name"]), o["name"]
    # The classes come from the HLO (truth_dtype); the times are the op rows' self time, summed over
    # every module the capture holds. Not the raw TraceMe durations: XLA:CPU's asynchronous dots run
    # on to their flow-linked "end:" event, which the model reads and a plain sum of the raw events
    # does not (their times are checked against the raw events where the spans are the TraceMe's:
    # test_real_captures, test_cpu_devices).
    progs = {q.module: q for q in hlo_truth.programs(mixed, metadata=True)}
    want: dict[str, float] = collections.defaultdict(float)
    for o in doc["ops"]:
        cls = precision_of(truth_dtype(progs[o["module"]], o["name"])) if o["module"] in progs else "unknown"
        want[cls] += o["self_ms"]
    raw = raw_times_ms(mixed, "jit_mixed_step")
    assert all(o["self_ms"] >= raw[o["name"]] - 1e-6 for o in ops)  # a TraceMe, or longer to its end:
    assert want["16-bit"] > 0 and want["32-bit"] > 0, dict(want)
    got = {r["precision"]: r["self_ms"] for r in doc["precision"]}
    for cls, ms in want.items():
        assert got[cls] == pytest.approx(ms, rel=1e-3, abs=1e-3), cls
    assert [r["self_ms"] for r in doc["precision"]] == sorted((r["self_ms"] for r in doc["precision"]), reverse=True)
    assert sum(r["pct_time"] for r in doc["precision"]) == pytest.approx(100, abs=0.01)
    # the report carries the same table, and says it in one line of text
    assert jaxprof_json("report", mixed)["precision"] == doc["precision"]
    text = run_jaxprof("report", mixed).stdout
    assert re.search(r"^Precision \(op self time .*: 32-bit \d+\.\d% 16-bit \d+\.\d%", text, re.M), text


def test_bf16_gemms_on_the_mi300_are_16_bit() -> None:
    """The MI300 GEMM capture's library GEMMs take bf16 operands (their HLO): their time is 16-bit."""
    doc = jaxprof_json("ops", GEMM, "--top", "1000")
    progs = {p.program_id: p for p in hlo_truth.programs(GEMM)}
    gemms = [o for o in doc["ops"] if o["category"] == "custom-call"]
    assert gemms
    for o in gemms:
        assert o["dtype"] == truth_dtype(progs[o["program_id"]], o["name"]) == "bf16", o
    for o in doc["ops"]:  # every op with HLO, not only the GEMMs
        if o["program_id"] in progs and o["name"] in progs[o["program_id"]].instrs:
            assert o["dtype"] == truth_dtype(progs[o["program_id"]], o["name"]), o["name"]
    split = {r["precision"]: r for r in doc["precision"]}
    bf16 = [o for o in doc["ops"] if o["dtype"] == "bf16"]
    assert split["16-bit"]["self_ms"] == pytest.approx(sum(o["self_ms"] for o in bf16))
    assert split["16-bit"]["ops"] == len(bf16) >= len(gemms)


def test_tpu_ops_compute_in_their_output_type() -> None:
    """The v6e capture's ops (no dot, convolution or custom call) compute in their output's type,
    which the raw events name in their HLO text ("%broadcast.2 = f32[...] broadcast(...)")."""
    out_type: dict[str, str] = {}
    for plane in raw_planes(TPU):
        if plane.name.startswith("/device:TPU:"):
            for line in plane.lines:
                for ev in line.events:
                    m = re.match(r"%([\w.\-]+) = \(?([a-z][a-z0-9]*)\[", ev.name)
                    assert not re.search(r" (dot|convolution|custom-call)\(", ev.name), ev.name
                    if m:
                        out_type[m.group(1)] = m.group(2)
    doc = jaxprof_json("ops", TPU, "--top", "1000")
    checked = [o for o in doc["ops"] if o["name"] in out_type]
    assert len(checked) >= 10
    for o in checked:
        assert o["dtype"] == out_type[o["name"]], o["name"]
    assert [r["precision"] for r in doc["precision"]] == ["32-bit"]


# ---- rematerialised ops ------------------------------------------------------------------------

def test_jax_checkpoint_recomputation_is_tagged_remat(remat: Path) -> None:
    """The ops that recompute the checkpointed forward pass, by the HLO's own op_names, are the ones
    tagged remat; the program's other ops are not."""
    doc = jaxprof_json("ops", remat, "--top", "1000")
    p = program_of(remat, "jit_remat_grad")
    ops = {o["name"]: o["remat"] for o in doc["ops"] if o["module"] == "jit_remat_grad"}
    want = {name: truth_remat(p, name) for name in ops}
    assert ops == want
    assert any(want.values()) and not all(want.values()), want
    tagged = jaxprof_json("ops", remat, "--top", "1000", "--columns", "name,remat")
    assert {o["name"] for o in tagged["ops"] if o["remat"]} == {n for n, r in want.items() if r}
    times = raw_times_ms(remat, "jit_remat_grad")
    share = 100 * sum(ms for n, ms in times.items() if want.get(n)) / sum(
        o["self_ms"] for o in jaxprof_json("ops", remat, "--top", "1000")["ops"])
    line = re.search(r"^Rematerialised: (\d+) ops, ([\d.]+)% of op self time", run_jaxprof("report", remat).stdout, re.M)
    assert line and int(line.group(1)) == sum(want.values())
    assert float(line.group(2)) == pytest.approx(share, abs=0.051)


def test_xla_remat_clones_are_tagged(tmp_path: Path) -> None:
    """XLA's rematerialization pass clones an instruction as "<name>.remat" (again: ".remat2", made
    unique: ".remat.1"); a name that merely starts with "remat" after a dot is not one. The HLO here
    has no shapes: no dtype, all op time "unknown" precision."""
    names = {"fusion.3.remat": True, "fusion.3.remat2": True, "dot.1.remat.1": True, "fusion.3": False,
             "copy.rematerialized": False, "add.remat_x": False}
    space = XSpace(hostnames=["h"])
    space.hlo_module(7, HloModule("jit_step", [HloComputation("main", 1, [
        HloInstruction(n, "fusion" if n.startswith("fusion") else "add", op_name="jit(step)/f") for n in names])]))
    stream = space.plane("/device:GPU:0").line("Stream #13(Compute)", id=13)
    for k, name in enumerate(names):
        stream.span("kernel_" + str(k), 100 * k, 100 * k + 50,
                    {"hlo_op": name, "hlo_module": "jit_step", "program_id": 7, "correlation_id": Uint(k + 1)})
    profile = space.write(tmp_path / "h.xplane.pb")
    doc = jaxprof_json("ops", profile, "--top", "100")
    assert {o["name"]: o["remat"] for o in doc["ops"]} == names
    assert all(o["dtype"] == "" for o in doc["ops"])
    assert [r["precision"] for r in doc["precision"]] == ["unknown"]
    assert "Rematerialised: 3 ops, 50.0% of op self time" in run_jaxprof("report", profile).stdout


# ---- wasted time -------------------------------------------------------------------------------

def _roof_pct(flops: float, nbytes: float, secs: float, peak: float, bw: float) -> float:
    if flops / nbytes >= peak / bw:
        return 100 * flops / secs / peak
    return 100 * nbytes / secs / bw


def test_wasted_time_of_the_matmuls_and_the_ranking(mixed: Path) -> None:
    """wasted = self x (1 - roof fraction), the roof fraction from the HLO's FLOPs and bytes over the
    raw events' time against the given peaks; --sort wasted ranks by it (unknown last), and the
    report's top-wasters table, within 100 columns, leads with the biggest waster."""
    doc = jaxprof_json("ops", mixed, *PEAKS, "--top", "1000")
    p = program_of(mixed, "jit_mixed_step")
    times, runs = raw_times_ms(mixed, "jit_mixed_step"), raw_runs(mixed, "jit_mixed_step")
    dots = [o for o in doc["ops"] if o["module"] == "jit_mixed_step" and hlo_truth.flops(p, o["name"]) > 0
            and "dot" in " ".join([p.instrs[o["name"]].opcode] + [p.instrs[n].opcode for n in
                                   p.computations.get(p.instrs[o["name"]].calls or "", [])])]  # type: ignore[attr-defined]
    assert len(dots) == 2
    for o in dots:
        secs = times[o["name"]] / 1e3
        n = runs[o["name"]]  # the HLO's counts are per execution
        roof = _roof_pct(n * hlo_truth.flops(p, o["name"]), n * hlo_truth.nbytes(p, o["name"]), secs, 0.2e12, 20e9)
        assert o["roof_pct"] == pytest.approx(roof, rel=1e-3)
        assert o["wasted_ms"] == pytest.approx(times[o["name"]] * (1 - min(roof, 100) / 100), rel=1e-3)
        assert o["wasted_pct"] == pytest.approx(o["pct_time"] * (1 - min(roof, 100) / 100), rel=1e-3)
    for o in doc["ops"]:
        if o["bound_by"]:
            assert o["wasted_ms"] == pytest.approx(o["self_ms"] * (1 - min(o["roof_pct"], 100) / 100), abs=1e-6)
        else:
            assert o["wasted_ms"] is None and o["wasted_pct"] is None
    ranked = jaxprof_json("ops", mixed, *PEAKS, "--sort", "wasted", "--top", "1000")["ops"]
    known = [o["wasted_ms"] for o in ranked if o["wasted_ms"] is not None]
    assert known == sorted(known, reverse=True)
    assert all(o["wasted_ms"] is None for o in ranked[len(known):])
    text = run_jaxprof("report", mixed, *PEAKS).stdout
    table = text.split("Top wasted time")[1].split("\n\n")[0].splitlines()
    assert table[1].split()[:2] == ["op", "category"] and "wasted_ms" in table[1]
    assert table[2].split()[0] == ranked[0]["name"]
    assert max(len(line) for line in text.splitlines()[1:]) <= 100  # the first names the file, as given


def test_no_wasted_time_without_peaks(mixed: Path) -> None:
    """Without a roof there is nothing to fall short of: null, and no top-wasters table."""
    doc = jaxprof_json("ops", mixed, "--top", "1000")
    assert all(d["peak_tflops"] is None or d["peak_tflops"] <= 0 for d in doc["devices"]), doc["devices"]
    assert all(not o["bound_by"] and o["wasted_ms"] is None and o["wasted_pct"] is None for o in doc["ops"])
    assert "Top wasted time" not in run_jaxprof("report", mixed).stdout


# ---- the TPU capture: XLA's own costs, from the event metadata ---------------------------------

def _metadata_costs(path: Path) -> dict[str, tuple[float, float]]:
    """Event metadata name -> (flops, bytes_accessed) on the device planes, read from the protobuf."""
    raw = gzip.decompress(path.read_bytes())
    out: dict[str, tuple[float, float]] = {}
    fields = hlo_truth._fields
    for num, _, plane in fields(raw):
        if num != 1:
            continue
        fs = list(fields(plane))
        if not any(n == 2 and v.startswith(b"/device:TPU:") for n, _, v in fs):
            continue
        stat_names = {}
        for n, _, entry in fs:
            if n == 5:
                for k, _, v in fields(entry):
                    if k == 2:
                        md = {kk: vv for kk, _, vv in fields(v)}
                        stat_names[md.get(1, 0)] = md.get(2, b"").decode()
        for n, _, entry in fs:
            if n != 4:
                continue
            for k, _, em in fields(entry):
                if k != 2:
                    continue
                name, cost = "", {"flops": 0.0, "bytes_accessed": 0.0}
                for kk, wt, vv in fields(em):
                    if kk == 2:
                        name = vv.decode()
                    elif kk == 5:
                        st = {a: (w, b) for a, w, b in fields(vv)}
                        sname = stat_names.get(st.get(1, (0, 0))[1], "")
                        if sname in cost:
                            for field_no, (w, b) in st.items():
                                if field_no == 2 and w == 1:
                                    cost[sname] = struct.unpack("<d", b)[0]
                                elif field_no in (3, 4) and w == 0:
                                    cost[sname] = float(b)
                out[name] = (cost["flops"], cost["bytes_accessed"])
    return out


def _tpu_op_events() -> list[tuple[str, int, float, float]]:
    """(op, start in ps, flops, bytes) of every op event on the TPUs' op lines."""
    costs = _metadata_costs(TPU)
    out = []
    for plane in raw_planes(TPU):
        if not plane.name.startswith("/device:TPU:"):
            continue
        for line in plane.lines:
            if line.name not in ("XLA Ops", "Async XLA Ops"):
                continue
            for ev in line.events:
                st = dict(ev.stats)
                m = re.match(r"%([\w.\-]+) =", ev.name)
                op = st.get("hlo_op") or (m.group(1) if m else ev.name)
                f, b = costs.get(ev.name, (0.0, 0.0))
                out.append((op, round(ev.start_ns * 1000), f, b))
    return out


def test_each_tpu_step_is_a_point_on_the_roofline() -> None:
    """Each step's bytes are XLA's bytes_accessed of the op events starting in it (an asynchronous
    done half left out: it repeats its start's), its FLOPs likewise; intensity, GB/s and the roof %
    follow from them, its time and the devices' summed peaks; the HTML report's roofline draws one
    point per step."""
    doc = jaxprof_json("steps", TPU)
    devices = [d for d in doc["devices"] if d["ops"]]
    peak = sum(d["peak_tflops"] for d in devices) * 1e12
    bw = sum(d["peak_gbps"] for d in devices) * 1e9
    events = sorted(_tpu_op_events(), key=lambda e: e[1])
    starts = [e[1] for e in events]
    steps = doc["steps"]
    assert len(steps) == 100
    for s in steps:
        lo = round(s["start_ms"] * 1e9)
        hi = lo + round(s["duration_ms"] * 1e9)
        inside = events[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, hi)]
        flops = sum(f for _, _, f, _ in inside)
        nbytes = sum(b for op, _, _, b in inside if not re.search(r"-done(\.|$)", op))
        assert s["flops"] == pytest.approx(flops, rel=1e-9), s["step"]
        assert s["bytes"] == pytest.approx(nbytes, rel=1e-9), s["step"]
        secs = s["duration_ms"] / 1e3
        assert s["intensity"] == pytest.approx(flops / nbytes, rel=1e-6)
        assert s["gbytes_per_s"] == pytest.approx(nbytes / secs / 1e9, rel=1e-6)
        assert s["roof_pct"] == pytest.approx(_roof_pct(flops, nbytes, secs, peak, bw), rel=1e-6)
    assert all(s["bytes"] > 0 for s in steps)


def test_the_roofline_chart_draws_the_steps(tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    proc = run_jaxprof("report", TPU, "--html", str(html))
    assert proc.returncode == 0, proc.stderr
    page = html.read_text()
    chart = page.split('id="roofline-chart"')[1].split("</svg>")[0]
    points = re.findall(r'<rect class="step"[^>]*><title>step (\d+): ([\d.e+]+) FLOP/byte', chart)
    assert [int(n) for n, _ in points] == list(range(100))
    doc = jaxprof_json("steps", TPU)
    for (n, x), s in zip(points, doc["steps"]):
        assert float(x) == pytest.approx(s["intensity"], rel=1e-2)
    assert "a step, all its ops as one program" in page
    # under the chart: the top wasters, in --sort wasted's order, and the precision split
    wasted = page.split("<h3>Top wasted time</h3>")[1].split("</table>")[0]
    names = re.findall(r'<code class="op">([^<]+)</code>', wasted)
    ranked = [o["name"] for o in jaxprof_json("ops", TPU, "--sort", "wasted", "--top", "1000")["ops"]
              if o["wasted_ms"]]
    assert names == ranked[:20] and names[0] == "all-reduce"
    assert "Op time by the precision ops compute in (HLO element types): 32-bit 100.0%." in page


def test_tpu_wasted_time_from_xla_costs() -> None:
    """On the v6e capture, each op with a roof wastes its self time x (1 - its roof fraction), the
    fraction from XLA's FLOPs and bytes over the events' device time, against one chip's peaks."""
    doc = jaxprof_json("ops", TPU, "--top", "1000")
    dev = doc["devices"][0]
    peak, bw = dev["peak_tflops"] * 1e12, dev["peak_gbps"] * 1e9
    costs = _metadata_costs(TPU)
    per_op: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for plane in raw_planes(TPU):
        if plane.name.startswith("/device:TPU:"):
            for line in plane.lines:
                if line.name == "XLA Ops":
                    for ev in line.events:
                        m = re.match(r"%([\w.\-]+) =", ev.name)
                        f, b = costs.get(ev.name, (0.0, 0.0))
                        row = per_op[m.group(1) if m else ev.name]
                        row[0] += f
                        row[1] += b
                        row[2] += dict(ev.stats).get("device_duration_ps", ev.duration_ns * 1000) / 1e12
    checked = 0
    for o in doc["ops"]:
        if not o["bound_by"]:
            continue
        f, b, secs = per_op[o["name"]]
        roof = _roof_pct(f, b, secs, peak, bw)
        assert o["roof_pct"] == pytest.approx(roof, rel=1e-6), o["name"]
        assert o["wasted_ms"] == pytest.approx(secs * 1e3 * (1 - min(roof, 100) / 100), rel=1e-6), o["name"]
        checked += 1
    assert checked >= 4
    assert jaxprof_json("ops", TPU, "--sort", "wasted")["ops"][0]["name"] == "all-reduce"
