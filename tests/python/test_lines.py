"""Device time back to the user's code, on real JAX CPU captures: source lines and Python stacks
from the HLO, `jaxprof lines`, the flame exports (folded, pprof), FLOPs per op against hand counts
and XLA's own cost analysis, and the roofline/MFU numbers they feed."""
from __future__ import annotations

import gzip
import inspect
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import pytest

from conftest import JAXPROF_BIN, jaxprof_json, run_jaxprof

M, K, N = 256, 512, 384


def marked_line(fn: Callable, marker: str) -> int:
    """The line number of the source line of fn that holds `marker` (a comment)."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def matmul_step(x: jax.Array, w: jax.Array) -> jax.Array:
    y = x @ w  # MATMUL
    return y


def capture(tmp: Path, fn: Callable, *args: Any, runs: int = 3) -> Path:
    """Jits fn, compiles it outside the trace, profiles `runs` calls; returns the run directory."""
    jitted = jax.jit(fn)
    jitted(*args).block_until_ready()
    jax.profiler.start_trace(str(tmp))
    for _ in range(runs):
        jitted(*args).block_until_ready()
    jax.profiler.stop_trace()
    (run,) = (tmp / "plugins" / "profile").iterdir()
    return run


def xla_flops(fn: Callable, *args: Any) -> float:
    """XLA's own count for one call: jax's compiled cost analysis."""
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    return float((cost[0] if isinstance(cost, list) else cost)["flops"])


def flops_per_call(run: Path, runs: int = 3) -> float:
    """jaxprof's FLOPs of every op of the capture, per call of the function."""
    ops = jaxprof_json("ops", run)["ops"]
    return sum(o["flops"] for o in ops) / runs


@pytest.fixture(scope="module")
def matmul_run(tmp_path_factory) -> Path:
    x, w = jnp.ones((M, K)), jnp.ones((K, N))
    return capture(tmp_path_factory.mktemp("matmul"), matmul_step, x, w)


# ---- source lines -------------------------------------------------------------------------------


def test_top_op_source_is_the_matmul_line(matmul_run):
    line = marked_line(matmul_step, "# MATMUL")
    ops = jaxprof_json("ops", matmul_run)["ops"]
    top = max(ops, key=lambda o: o["self_ms"])
    assert top["source"] == f"{__file__}:{line}"
    assert top["function"] == "matmul_step"
    innermost = top["stack"][0]
    assert (innermost["file"], innermost["line"], innermost["function"]) == (__file__, line, "matmul_step")
    assert not innermost["library"]
    # the rest of the stack is the caller chain JAX recorded: capture() called the jitted function
    assert any(f["function"] == "capture" for f in top["stack"][1:])


def test_lines_ranks_the_matmul_line_first(matmul_run):
    line = marked_line(matmul_step, "# MATMUL")
    doc = jaxprof_json("lines", matmul_run)
    first = doc["lines"][0]
    assert (first["file"], first["line"], first["function"]) == (__file__, line, "matmul_step")
    assert first["source"] == f"{Path(__file__).name}:{line}"  # relative to the common directory
    ops = jaxprof_json("ops", matmul_run)["ops"]
    on_line = [o for o in ops if o["source"] == f"{__file__}:{line}"]
    assert first["count"] == sum(o["count"] for o in on_line)
    assert first["self_ms"] == pytest.approx(sum(o["self_ms"] for o in on_line), abs=1e-5)
    text = run_jaxprof("lines", matmul_run).stdout
    assert f"{Path(__file__).name}:{line}" in text.splitlines()[1]
    report = run_jaxprof("report", matmul_run).stdout
    assert "Top source lines" in report


def test_dot_flops_are_2mnk(matmul_run):
    ops = jaxprof_json("ops", matmul_run)["ops"]
    dots = [o for o in ops if o["category"].startswith("matmul")]
    assert dots, [o["name"] for o in ops]
    assert sum(o["flops"] for o in dots) / 3 == 2 * M * N * K
    x, w = jnp.ones((M, K)), jnp.ones((K, N))
    assert flops_per_call(matmul_run) == xla_flops(matmul_step, x, w) == 2 * M * N * K


def test_library_frames_are_skipped_for_the_source_line(tmp_path):
    """A helper living in a site-packages directory is library code: the op's line is the user's
    call into it; --library-frames '' makes the innermost frame count again."""
    lib = tmp_path / "site-packages" / "mylib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("import jax.numpy as jnp\n\ndef dense(x, w):\n    return jnp.tanh(x @ w)\n")
    sys.path.insert(0, str(lib.parent))
    try:
        import mylib  # noqa: PLC0415

        def user_model(x, w):
            return mylib.dense(x, w) * 2  # USER CALL

        run = capture(tmp_path / "trace", user_model, jnp.ones((128, 128)), jnp.ones((128, 128)))
    finally:
        sys.path.remove(str(lib.parent))
    line = marked_line(user_model, "# USER CALL")
    top = max(jaxprof_json("ops", run)["ops"], key=lambda o: o["self_ms"])
    assert top["source"] == f"{__file__}:{line}"
    assert top["stack"][0]["file"] == str(lib / "__init__.py") and top["stack"][0]["library"]
    raw = max(jaxprof_json("ops", run, "--library-frames", "")["ops"], key=lambda o: o["self_ms"])
    assert raw["source"] == f"{lib / '__init__.py'}:4"
    folded = run_jaxprof("flame", run, "--folded").stdout
    assert f"user_model ({Path(__file__).name}:{line});[mylib];" in folded  # the package folded to one node
    bad = run_jaxprof("lines", run, "--library-frames", "(")
    assert bad.returncode == 2 and "library-frames" in bad.stderr


# ---- a fusion of several lines ---------------------------------------------------------------------

FM = 512  # the fused dot's size: its 2*FM^3 FLOPs dwarf the reduce's FM*(FM-1) adds


def dot_then_reduce(x: jax.Array, w: jax.Array) -> jax.Array:
    y = jnp.dot(x, w)  # FUSED DOT
    return y.sum(axis=1)  # FUSED REDUCE


def fused_computations(hlo: str) -> dict[str, str]:
    """Each fusion instruction of the compiled HLO text -> the body of the computation it calls."""
    bodies = dict(re.findall(r"^%([\w.\-]+) \(.*?\{\n(.*?)\n\}", hlo, re.M | re.S))
    calls = re.findall(r"%([\w.\-]+) = \S+ fusion\(.*?calls=%([\w.\-]+)", hlo)
    return {name: bodies.get(comp, "") for name, comp in calls}


def test_fusion_reports_its_dot_line_and_splits_its_time_by_modelled_cost(tmp_path):
    """XLA:CPU fuses a dot and the reduce of its result into one fusion whose own metadata names the
    reduce: the op takes op_name and source line from the dot alike, and `jaxprof lines`/`flame`
    split its time over both lines by their modelled FLOPs, the dot's line first."""
    x, w = jnp.ones((FM, FM)), jnp.ones((FM, FM))
    fused = fused_computations(jax.jit(dot_then_reduce).lower(x, w).compile().as_text())
    (fusion_name,) = [n for n, body in fused.items() if " dot(" in body and " reduce(" in body]
    run = capture(tmp_path, dot_then_reduce, x, w)
    dot_line, reduce_line = marked_line(dot_then_reduce, "# FUSED DOT"), marked_line(dot_then_reduce, "# FUSED REDUCE")

    (fusion,) = [o for o in jaxprof_json("ops", run)["ops"] if o["name"] == fusion_name]
    assert fusion["op_name"].endswith("/dot_general")  # the dot's op_name and the dot's line, not the reduce's
    assert fusion["source"] == f"{__file__}:{dot_line}"
    assert fusion["stack"][0]["line"] == dot_line

    doc = jaxprof_json("lines", run)
    rows = {row["line"]: row for row in doc["lines"] if row["file"] == __file__}
    assert doc["lines"][0]["line"] == dot_line  # the line doing the work ranks first
    dot_row, reduce_row = rows[dot_line], rows[reduce_line]
    assert fusion_name in dot_row["ops"] and fusion_name in reduce_row["ops"]
    assert dot_row["self_ms"] + reduce_row["self_ms"] == pytest.approx(fusion["self_ms"], abs=2e-6)
    # the split is by modelled cost: the dot's 2*M^3 FLOPs against the reduce's M*(M-1) adds
    dot_flops, reduce_flops = 2 * FM**3, FM * (FM - 1)
    assert reduce_row["self_ms"] == pytest.approx(fusion["self_ms"] * reduce_flops / (dot_flops + reduce_flops), abs=2e-6)
    assert dot_row["flops"] == pytest.approx(3 * dot_flops) and reduce_row["flops"] == pytest.approx(3 * reduce_flops)
    # marked as an estimate, in JSON and text
    assert dot_row["split_ms"] == dot_row["self_ms"] and reduce_row["split_ms"] == reduce_row["self_ms"]
    assert doc["split_ms"] == pytest.approx(fusion["self_ms"], abs=2e-6) and "estimate" in doc["split_note"]
    assert "estimated:" in run_jaxprof("lines", run).stdout
    assert "of it estimated: fusions split over their source lines by modelled cost" in run_jaxprof("report", run).stdout

    flame = jaxprof_json("flame", run)
    leaves = [n for n in flame["flame"] if n["kind"] == "op" and n["name"] == fusion_name]
    assert sum(n["self_ms"] for n in leaves) == pytest.approx(fusion["self_ms"], abs=2e-6)
    parents = {flame["flame"][n["parent"]]["line"]: n["self_ms"] for n in leaves}
    assert parents[dot_line] == pytest.approx(dot_row["self_ms"], abs=1e-6)
    assert parents[reduce_line] == pytest.approx(reduce_row["self_ms"], abs=1e-6)
    folded = run_jaxprof("flame", run, "--folded").stdout
    assert f"dot_then_reduce ({Path(__file__).name}:{reduce_line});{fusion_name} " in folded


# ---- known-answer FLOPs ---------------------------------------------------------------------------


def batched_dot(a, b):
    return jnp.einsum("bmk,bkn->bmn", a, b)


def conv_nhwc(x, k):
    return jax.lax.conv_general_dilated(x, k, window_strides=(2, 2), padding=((1, 1), (1, 1)),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2)


def reduce_sum(x):
    return x.sum(axis=1)


def elementwise(x, y):
    return x * y + x - y


def conv_flops_by_hand() -> int:
    """2 x (in features per group) x out features x batch x valid (kernel, output) pairs per dim."""
    n, h, w, c_in, c_out, kh = 2, 17, 17, 8, 6, 3
    out = (h + 2 - kh) // 2 + 1  # 9
    valid = sum(1 for k in range(kh) for o in range(out) if 0 <= o * 2 - 1 + k < h)
    return 2 * (c_in // 2) * c_out * n * valid * valid


CASES = {
    "batched_dot": (batched_dot, lambda: (jnp.ones((4, 32, 48)), jnp.ones((4, 48, 40))), 2 * 4 * 32 * 40 * 48),
    "conv": (conv_nhwc, lambda: (jnp.ones((2, 17, 17, 8)), jnp.ones((3, 3, 4, 6))), conv_flops_by_hand()),
    "reduce": (reduce_sum, lambda: (jnp.ones((64, 100)),), 64 * 100 - 64),
    "elementwise": (elementwise, lambda: (jnp.ones((50, 60)), jnp.ones((50, 60))), 3 * 50 * 60),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_flops_match_hand_count_and_xla(case, tmp_path):
    fn, make_args, by_hand = CASES[case]
    args = make_args()
    run = capture(tmp_path, fn, *args)
    assert flops_per_call(run) == by_hand
    assert xla_flops(fn, *args) == by_hand


# ---- flame exports --------------------------------------------------------------------------------


def device_time_ns(run: Path) -> float:
    return sum(o["self_ms"] for o in jaxprof_json("ops", run)["ops"]) * 1e6


def test_folded_stacks_sum_to_the_device_time(matmul_run):
    folded = run_jaxprof("flame", matmul_run, "--folded").stdout.splitlines()
    total = sum(int(line.rsplit(" ", 1)[1]) for line in folded)
    assert total == pytest.approx(device_time_ns(matmul_run), abs=len(folded))
    line = marked_line(matmul_step, "# MATMUL")
    assert any(f"matmul_step ({Path(__file__).name}:{line});" in s for s in folded)
    tree = jaxprof_json("flame", matmul_run)["flame"]
    assert tree[0]["name"] == "all" and tree[0]["self_ms"] == 0
    assert tree[0]["total_ms"] == pytest.approx(device_time_ns(matmul_run) / 1e6, abs=1e-5)
    leaves = [n for n in tree if n["kind"] == "op"]
    assert sum(n["self_ms"] for n in leaves) == pytest.approx(tree[0]["total_ms"], abs=1e-5)


def profile_message_class():
    """perftools.profiles.Profile (github.com/google/pprof proto/profile.proto), the part pprof
    reads for samples and their stacks, built as a protobuf descriptor: the file is decoded by
    protobuf itself against the real schema (Go's pprof is not packaged for Debian 12)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    f = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="jaxprof_test_profile.proto", package="perftools.profiles",
                                             syntax="proto3")
    schema = {
        "Profile": [("sample_type", 1, "ValueType", True), ("sample", 2, "Sample", True),
                    ("location", 4, "Location", True), ("function", 5, "Function", True),
                    ("string_table", 6, f.TYPE_STRING, True), ("duration_nanos", 10, f.TYPE_INT64, False),
                    ("period_type", 11, "ValueType", False), ("period", 12, f.TYPE_INT64, False),
                    ("default_sample_type", 14, f.TYPE_INT64, False)],
        "ValueType": [("type", 1, f.TYPE_INT64, False), ("unit", 2, f.TYPE_INT64, False)],
        "Sample": [("location_id", 1, f.TYPE_UINT64, True), ("value", 2, f.TYPE_INT64, True)],
        "Location": [("id", 1, f.TYPE_UINT64, False), ("line", 4, "Line", True)],
        "Line": [("function_id", 1, f.TYPE_UINT64, False), ("line", 2, f.TYPE_INT64, False)],
        "Function": [("id", 1, f.TYPE_UINT64, False), ("name", 2, f.TYPE_INT64, False),
                     ("system_name", 3, f.TYPE_INT64, False), ("filename", 4, f.TYPE_INT64, False)],
    }
    for name, fields in schema.items():
        msg = fdp.message_type.add(name=name)
        for fname, number, ftype, repeated in fields:
            field = msg.field.add(name=fname, number=number,
                                  label=f.LABEL_REPEATED if repeated else f.LABEL_OPTIONAL)
            if isinstance(ftype, str):
                field.type, field.type_name = f.TYPE_MESSAGE, f".perftools.profiles.{ftype}"
            else:
                field.type = ftype
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("perftools.profiles.Profile"))


def test_pprof_profile_totals_equal_the_device_time(matmul_run, tmp_path):
    out = tmp_path / "device.pb.gz"
    proc = run_jaxprof("flame", matmul_run, "--pprof", out)
    assert proc.returncode == 0, proc.stderr
    profile = profile_message_class().FromString(gzip.decompress(out.read_bytes()))
    strings = list(profile.string_table)
    assert strings[0] == ""
    assert [(strings[t.type], strings[t.unit]) for t in profile.sample_type] == [("device_time", "nanoseconds")]
    total = sum(s.value[0] for s in profile.sample)
    assert total == pytest.approx(device_time_ns(matmul_run), abs=len(profile.sample))
    folded = run_jaxprof("flame", matmul_run, "--folded").stdout.splitlines()
    assert total == sum(int(line.rsplit(" ", 1)[1]) for line in folded)
    # each sample's stack, leaf first, names the same frames as its folded line
    functions = {fn.id: strings[fn.name] for fn in profile.function}
    locations = {loc.id: functions[loc.line[0].function_id] for loc in profile.location}
    stacks = {";".join(reversed([locations[i] for i in s.location_id])): s.value[0] for s in profile.sample}
    assert stacks == {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in folded}
    line = marked_line(matmul_step, "# MATMUL")
    assert any(f"matmul_step ({Path(__file__).name}:{line})" in stack for stack in stacks)
    pprof = shutil.which("pprof") or shutil.which("google-pprof")
    if pprof:  # Go's pprof as well, when installed
        top = subprocess.run([pprof, "-top", "-unit=ns", str(out)], capture_output=True, text=True, timeout=120)
        assert top.returncode == 0, top.stderr
        assert f"{total}ns total" in top.stdout.replace(",", "")


# ---- roofline and MFU -----------------------------------------------------------------------------


def test_roofline_and_mfu_with_given_peaks(matmul_run):
    peak_tflops, peak_gbps = 0.2, 20.0
    doc = jaxprof_json("report", matmul_run, "--peak-tflops", str(peak_tflops), "--peak-gbps", str(peak_gbps))
    (device,) = doc["devices"]
    assert (device["peak_tflops"], device["peak_gbps"], device["peak_source"]) == (peak_tflops, peak_gbps, "flag")
    for op in doc["ops"]:
        if op["flops"] <= 0 or op["bytes"] <= 0:
            continue
        secs = op["total_ms"] / 1e3
        intensity = op["flops"] / op["bytes"]
        assert op["intensity"] == pytest.approx(intensity)
        if intensity >= peak_tflops * 1e12 / (peak_gbps * 1e9):
            assert op["bound_by"] == "compute"
            assert op["roof_pct"] == pytest.approx(100 * op["flops"] / secs / (peak_tflops * 1e12), rel=1e-3)
        else:
            assert op["bound_by"] == "memory"
            assert op["roof_pct"] == pytest.approx(100 * op["bytes"] / secs / (peak_gbps * 1e9), rel=1e-3)
    summary, steps = doc["step_summary"], doc["steps"]
    for s in steps:
        assert s["gflops_per_s"] == pytest.approx(s["flops"] / (s["duration_ms"] / 1e3) / 1e9, rel=1e-4)
    assert summary["flops_per_step"] == pytest.approx(sum(s["flops"] for s in steps) / len(steps))
    step_s = sum(s["duration_ms"] for s in steps) / 1e3
    mfu = 100 * sum(s["flops"] for s in steps) / step_s / (peak_tflops * 1e12)
    assert summary["mfu_pct"] == pytest.approx(mfu, rel=1e-4)
    kpi = next(k for k in doc["kpis"] if k["name"] == "MFU")
    assert kpi["value"] == pytest.approx(mfu, rel=1e-4)
    plain = jaxprof_json("report", matmul_run)
    assert plain["step_summary"]["mfu_pct"] is None  # a CPU profile records no peaks
    assert plain["step_summary"]["flops_per_step"] == summary["flops_per_step"] > 0  # FLOPs need no peak
    assert next(k for k in plain["kpis"] if k["name"] == "MFU")["rating"] == "n/a"


# ---- host time by Python function ------------------------------------------------------------------


def slow_preprocess(n: int) -> float:
    """Pure-Python work the device waits for."""
    total = 0.0
    for i in range(n):
        total += (i % 7) * 0.5
    return total


def test_host_bound_names_the_slow_python_function(tmp_path):
    """With the Python tracer on, the host-bound evidence names the Python function the host
    spends the device's idle time in, not only the jitted step's dispatch."""
    step = jax.jit(lambda x: x * 2.0)
    x = jnp.ones((16, 16))
    step(x).block_until_ready()
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 1
    jax.profiler.start_trace(str(tmp_path), profiler_options=options)
    for i in range(6):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            slow_preprocess(200_000)
            step(x).block_until_ready()
    jax.profiler.stop_trace()
    found = {f["id"]: f for f in jaxprof_json("findings", tmp_path)["findings"]}
    assert "host_bound" in found, found
    evidence = found["host_bound"]["evidence"]
    assert "slowest Python functions while the device is idle" in evidence, evidence
    first = evidence.split("(self time per step): ")[1].split(",")[0]
    assert "slow_preprocess" in first, evidence
    per_step_ms = float(first.rsplit(" ", 2)[-2])
    assert per_step_ms > 1, evidence


def test_calibrate_gives_cpu_profiles_of_this_host_peaks(matmul_run, tmp_path):
    """`jaxprof calibrate` measures this machine and caches it; a CPU profile captured on this
    host then has peaks ("calibrated") and an MFU; a calibration of another host is ignored."""
    env = dict(os.environ, JAXPROF_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([str(JAXPROF_BIN), "calibrate", "--matmul-n", "512", "--stream-mb", "32"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    fields = dict(line.split("=", 1) for line in (tmp_path / "cpu_peaks").read_text().splitlines()
                  if "=" in line and not line.startswith("#"))
    assert fields["hostname"] == socket.gethostname()
    tflops, gbps = float(fields["peak_tflops"]), float(fields["peak_gbps"])
    assert tflops > 0 and gbps > 0

    def report() -> dict[str, Any]:
        out = subprocess.run([str(JAXPROF_BIN), "report", str(matmul_run), "--json"], capture_output=True,
                             text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    doc = report()
    (device,) = doc["devices"]
    assert (device["peak_tflops"], device["peak_gbps"], device["peak_source"]) == (tflops, gbps, "calibrated")
    steps = doc["steps"]
    mfu = 100 * sum(s["flops"] for s in steps) / (sum(s["duration_ms"] for s in steps) / 1e3) / (tflops * 1e12)
    assert doc["step_summary"]["mfu_pct"] == pytest.approx(mfu, rel=1e-4)
    (tmp_path / "cpu_peaks").write_text(f"hostname=elsewhere\npeak_tflops={tflops}\npeak_gbps={gbps}\n")
    assert report()["devices"][0]["peak_source"] == ""
