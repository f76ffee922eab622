"""jaxprof against XProf on real captures written by others (../shared/captures, JAXPROF_REAL_CAPTURES) and on every layout of
the benchmark generator: both tools read the same file, and every number XProf has must agree.

Where the two differ on purpose the test says so and docs/design.md says why; docs/fidelity.md
(tools/fidelity.py) shows the same comparison as tables. XProf runs in this process through its
converters (tests/python/xprof_oracle.py copies each input away first: XProf caches beside it).
"""
from __future__ import annotations

import gzip
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import xprof_oracle
from conftest import REAL_CAPTURES, jaxprof_json, run_jaxprof

REAL = REAL_CAPTURES
GEN = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_xplane.py"

# Every fixture that is a profile (the mangled one is bad input, tested below).
PROFILES = sorted(p.name for p in REAL.glob("*.xplane.pb.gz") if not p.name.startswith("mangled"))
TF_GPU = "tf_bert_8xv100_worker0.xplane.pb.gz"
TPU = "jax_tpu_v6e_4core_inference.xplane.pb.gz"



@pytest.fixture(scope="module")
def both() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """(jaxprof report JSON, XProf's numbers) per fixture, computed once."""
    return {name: (jaxprof_json("report", REAL / name), xprof_oracle.xprof_numbers(REAL / name))
            for name in PROFILES}


def test_every_fixture_is_a_real_capture_with_provenance() -> None:
    readme = (REAL / "README.md").read_text()
    assert len(PROFILES) >= 8
    for name in PROFILES:
        assert f"`{name}`" in readme, f"{name} has no provenance row"


def kernel_key(k: dict[str, Any]) -> tuple:
    return (k["name"], tuple(k["grid"]), tuple(k["block"]), k["registers"])


def sum_kernels(rows: list[dict[str, Any]], key) -> dict[tuple, list[float]]:
    """Rows summed by key (both tools may split one kernel by details the other ignores)."""
    out: dict[tuple, list[float]] = defaultdict(lambda: [0, 0.0, float("inf"), 0.0])
    for k in rows:
        s = out[key(k)]
        s[0] += k["count"]
        s[1] += k["total_us"]
        s[2] = min(s[2], k["min_us"])
        s[3] = max(s[3], k["max_us"])
    return dict(out)


def our_kernels(path: Path) -> dict[tuple, list[float]]:
    rows = [{"count": k["count"], "total_us": k["total_ms"] * 1e3, "min_us": k["min_ms"] * 1e3,
             "max_us": k["max_ms"] * 1e3, "name": k["name"], "grid": [int(x) for x in k["grid"].split(",")],
             "block": [int(x) for x in k["block"].split(",")], "registers": k["registers"]}
            for k in jaxprof_json("kernels", path)["kernels"]]
    return sum_kernels(rows, kernel_key)


def xprof_kernels(xprof: dict[str, Any]) -> dict[tuple, list[float]]:
    return sum_kernels([{"count": k["occurrences"], **k} for k in xprof["kernels"]], kernel_key)


@pytest.mark.parametrize("name", PROFILES)
def test_devices_agree(both, name: str) -> None:
    ours, xprof = both[name]
    assert xprof["device_count"] == len(ours["devices"]), "XProf counts every accelerator plane, empty or not"
    kind = "TPU" if "TPU" in (xprof["device_type"] or "") else "GPU"
    assert ours["platform"] == kind.lower()
    assert {d["platform"] for d in ours["devices"]} == {kind.lower()}  # one spelling in the document


@pytest.mark.parametrize("name", PROFILES)
def test_kernels_agree(both, name: str) -> None:
    """kernel_stats: the same kernels, launches, total, min and max. XProf cuts each kernel's
    duration to whole nanoseconds, so its sums may be up to 1 ns a launch lower."""
    ours, xprof = both[name]
    if xprof["kernels"] is None:
        assert ours["kernels"] == []
        return
    mine, theirs = our_kernels(REAL / name), xprof_kernels(xprof)
    assert mine.keys() == theirs.keys()
    for key, (n, total, lo, hi) in theirs.items():
        got = mine[key]
        assert got[0] == n, key
        assert total - 1e-9 <= got[1] <= total + n * 1e-3 + 1e-9, key
        assert lo - 1e-9 <= got[2] <= lo + 1e-3 + 1e-9 and hi - 1e-9 <= got[3] <= hi + 1e-3 + 1e-9, key


@pytest.mark.parametrize("name", PROFILES)
def test_ops_agree(both, name: str) -> None:
    """hlo_stats: every XLA op XProf resolves has the same occurrences (summed over devices), and
    total and self time within 1%. jaxprof also lists device work XProf leaves out of hlo_stats:
    kernels whose hlo_op is not in the HloProto (ROCm's copyBuffer) and TensorFlow ops."""
    ours, xprof = both[name]
    theirs = xprof_oracle.sum_by_name(xprof["hlo_ops"] or [], "occurrences", ("total_us", "self_us"))
    mine = xprof_oracle.sum_by_name(jaxprof_json("ops", REAL / name)["ops"], "count", ("total_ms", "self_ms"), 1e3)
    if name == TF_GPU:
        # XProf's hlo_stats is empty: TensorFlow's kernels carry neither hlo_op nor tf_op, and XProf
        # reads framework ops only from tf_op (the derived TensorFlow Ops line it ignores). jaxprof
        # takes them from the annotation: one op per framework op, the kernels' sum.
        assert theirs == {}
        assert sum(v[0] for v in mine.values()) == 1330
        assert sum(v[1] for v in mine.values()) == pytest.approx(29690.748, abs=1e-3)
        return
    assert theirs, "XProf resolved no op of a JAX capture"
    for op, (n, total, self_) in theirs.items():
        assert op in mine, op
        assert mine[op][0] == n, op
        assert mine[op][1] == pytest.approx(total, rel=0.01, abs=1e-3), op
        assert mine[op][2] == pytest.approx(self_, rel=0.01, abs=1e-3), op


@pytest.mark.parametrize("name", PROFILES)
def test_steps_agree_where_xprof_has_steps(both, name: str) -> None:
    ours, xprof = both[name]
    if xprof["steps"] is None:
        # XProf measures steps only from markers: jaxprof finds none either, and says which
        # fallback (executions, dispatches) it used instead, if any
        assert ours["step_summary"]["method"] not in ("StepTraceAnnotation", "device Steps line")
        assert (ours["step_summary"]["method"] == "none") == (ours["step_summary"]["count"] == 0)
        return
    assert ours["step_summary"]["count"] == xprof["steps"]["count"]
    assert ours["step_summary"]["mean_ms"] == pytest.approx(xprof["steps"]["mean_ms"], rel=0.03)


def test_tf_gpu_step_and_breakdown(both) -> None:
    """The derived Steps line TensorFlow saved: one step of 21.31 ms, as XProf, timed by the GPU
    whose step was the longest; its compute time matches XProf's device compute (14.88 ms)."""
    ours, xprof = both[TF_GPU]
    assert ours["step_summary"]["method"] == "device Steps line"
    (step,) = ours["steps"]
    assert step["duration_ms"] == pytest.approx(21.310352, abs=1e-6)
    assert xprof["steps"]["mean_ms"] == pytest.approx(step["duration_ms"], abs=1e-3)
    assert step["compute_ms"] == pytest.approx(xprof["steps"]["per_step"][0][2], rel=0.01)


def test_tpu_idle_agrees(both) -> None:
    """Device idle over each core's first-to-last op, XProf's window and definition."""
    ours, xprof = both[TPU]
    assert ours["device_idle_pct"] == pytest.approx(xprof["device_idle_pct_exact"], abs=0.01)


def test_tpu_steps_are_per_core_executions(both) -> None:
    """XProf finds no steps (no markers); jaxprof matches executions core by core: the k-th run
    of jit_f on each of the 4 cores is step k, 100 of them, not 400 interleaved ones."""
    ours, _ = both[TPU]
    s = ours["step_summary"]
    assert (s["count"], s["method"]) == (100, "executions of jit_f")
    assert 700 < s["median_ms"] < 900 and s["min_ms"] > 500


@pytest.mark.parametrize("name", PROFILES)
def test_memory_peaks_agree(both, name: str) -> None:
    """memory_profile: the most bytes in use (allocated + reserved) per allocator; libtpu's
    allocators are per chip (XProf: memory id "N", jaxprof: "device N")."""
    ours, xprof = both[name]
    theirs = {k: v["peak_bytes_in_use"] for k, v in (xprof["memory"] or {}).items()}
    mine = {m["allocator"].removeprefix("device "): m["peak_bytes"] for m in ours["memory"]}
    assert mine == theirs


def test_mangled_file_is_refused_with_its_offset(tmp_path: Path) -> None:
    """A mirror re-encoded the TPU capture as text (every byte >= 0x80 became U+FFFD): a clear
    error naming the file and the byte offset, exit code 2."""
    path = tmp_path / "mangled.xplane.pb"
    path.write_bytes(gzip.decompress((REAL / "mangled_utf8_tpu_inference.xplane.pb.gz").read_bytes()))
    proc = run_jaxprof("report", path)
    assert proc.returncode == 2
    assert str(path) in proc.stderr and "at byte 0" in proc.stderr and "truncated" in proc.stderr


# ---- the generator's layouts ------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["cpu", "gpu"])
def test_generated_layouts_agree(tmp_path: Path, layout: str) -> None:
    """benchmarks/gen_xplane.py: XProf reads the same kernels as jaxprof (GPU). It resolves no HLO
    op of these files (it wants a program shape in the HloProto, which the generator leaves out),
    and on XLA:CPU it has no device and no op statistics at all: the comparisons it can make."""
    path = tmp_path / f"{layout}.xplane.pb"
    subprocess.run([sys.executable, str(GEN), "--layout", layout, "--steps", "4", "--gpus", "2", "--ops", "12",
                    "-o", str(path)], check=True, capture_output=True)
    xprof = xprof_oracle.xprof_numbers(path)
    ours = jaxprof_json("report", path)
    if layout == "cpu":
        assert xprof["device_count"] == 0 and not xprof["hlo_ops"]
        assert [d["name"] for d in ours["devices"]] == ["/host:CPU"] and ours["ops"]
        return
    assert xprof["device_count"] == len(ours["devices"]) == 2
    mine, theirs = our_kernels(path), xprof_kernels(xprof)
    assert mine.keys() == theirs.keys()
    for key, (n, total, _, _) in theirs.items():
        assert mine[key][0] == n and total - 1e-9 <= mine[key][1] <= total + n * 1e-3 + 1e-9, key


def test_tpu_ops_carry_framework_op_and_source(both) -> None:
    """libtpu names XLA Ops metadata by the whole HLO text: jaxprof shows the instruction name, its
    framework op (XProf's "Framework op name", the tf_op stat) and the scope and source behind it."""
    _, xprof = both[TPU]
    ops = {o["name"]: o for o in jaxprof_json("ops", REAL / TPU)["ops"]}
    assert not any(n.startswith("%") for n in ops)
    for r in xprof["hlo_ops"]:
        assert ops[r["name"]]["op_name"] == r["framework_op"].removesuffix(":"), r["name"]
        shown = re.search(r"'>([^<]*)</div>", r["source"] or "")  # XProf's cell: the stack in a title
        assert ops[r["name"]]["source"] == (shown.group(1) if shown else ""), r["name"]
    fusion = ops["broadcast_add_fusion"]
    assert (fusion["op_name"], fusion["scope"]) == ("jit(f)/jit(main)/add", "f")
    assert fusion["source"].endswith("host_offload_stress_test.py:29")


def test_tpu_one_device_view_and_bandwidth_per_chip() -> None:
    """Ops are summed over the 4 cores by default; --device keeps one core's rows. The memory
    bandwidth KPI is per chip (each has its own HBM and peak): the mean of the chips' own KPIs."""
    def kpi(doc: dict[str, Any]) -> float:
        return next(k["value"] for k in doc["kpis"] if k["name"] == "memory bandwidth")

    every = jaxprof_json("report", REAL / TPU)
    ops = {o["name"]: o for o in every["ops"]}
    assert (ops["copy-done.2"]["count"], ops["copy-done.2"]["devices"]) == (400, 4)
    per_chip = []
    for n in range(4):
        one = jaxprof_json("report", REAL / TPU, "--device", str(n))
        mine = {o["name"]: o for o in one["ops"]}
        assert (mine["copy-done.2"]["count"], mine["copy-done.2"]["device"]) == (100, f"/device:TPU:{n}")
        per_chip.append(kpi(one))
    assert kpi(every) == pytest.approx(sum(per_chip) / 4, rel=1e-4)
    # bytes over busy time, each asynchronous copy's bytes once (its copy-done repeats its
    # copy-start's): 5.0% of 1.64 TB/s, not a quarter of that
    assert 4.5 < kpi(every) < 5.5


def test_tf_kernels_of_different_ops_stay_apart() -> None:
    """97 Philox kernels per GPU belong to 97 dropout ops: each is its own op (named by the framework
    op TensorFlow wrote in the kernel's annotation, typed by its TF op type), none merged."""
    ops = jaxprof_json("ops", REAL / TF_GPU)["ops"]
    rng = [o for o in ops if o["category"] == "RandomUniform"]
    assert len(rng) == 194 and {o["count"] for o in rng} == {1}
    assert all("/dropout" in o["name"] and "#" not in o["name"] for o in rng)


def test_tpu_host_dispatches_are_no_transfers_and_export_steps_per_core(tmp_path: Path) -> None:
    """Beside a TPU, the host's "H2D Dispatch" only queues a copy: no transfers of 0 bytes, no
    /host:CPU device. The export's Steps rows hold the 100 per-core steps, one row per core."""
    from trace_check import load_chrome_trace

    doc = jaxprof_json("transfers", REAL / TPU)
    assert [(t["kind"], t["count"]) for t in doc["transfers"]] == [("H2D", 0), ("D2H", 0), ("D2D", 0)]
    assert "/host:CPU" not in {d["name"] for d in doc["devices"]}
    out = tmp_path / "tpu.json"
    assert run_jaxprof("export", REAL / TPU, "-o", out).returncode == 0
    events = load_chrome_trace(out)["traceEvents"]
    process = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    rows = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
            and e["args"]["name"] == "Steps"}
    per_plane = defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and (e["pid"], e["tid"]) in rows:
            per_plane[process[e["pid"]]] += 1
    assert dict(per_plane) == {f"/device:TPU:{n}": 100 for n in range(4)}


def test_tpu_roofline_agrees_with_xprof_hlo_stats(both) -> None:
    """Per op on the v6e capture: FLOP/s, HBM bandwidth, intensity and the bound match XProf's
    hlo_stats, and jaxprof's own FLOP count from the HLO equals libtpu's flops stat."""
    ours, xprof = both[TPU]
    theirs = {(o["name"]): o for o in xprof["hlo_ops"]}
    checked = 0
    for op in ours["ops"]:
        x = theirs.get(op["name"])
        if not x or not x["total_us"] or x["total_us"] < 1:  # XProf keeps sub-microsecond times to the ns
            continue
        assert op["intensity"] == pytest.approx(x["intensity"] or 0, rel=1e-6, abs=1e-12)
        if re.search(r"-(start|done)(\.|$)", op["name"]):  # async halves: no rates, unplaced (below)
            assert op["gflops_per_s"] is None and op["gbytes_per_s"] is None
            assert x["hbm_gib_per_s"] > 0  # XProf divides the copy's bytes by a launch's or a wait's time
            checked += 1
            continue
        assert op["gflops_per_s"] == pytest.approx(x["model_gflops_per_s"] or 0, rel=1e-6, abs=1e-9)
        assert op["gbytes_per_s"] * 1e9 / 2**30 == pytest.approx(x["hbm_gib_per_s"], rel=1e-6)
        assert {"HBM": "memory", "Compute": "compute"}[x["bound_by"]] == op["bound_by"]
        checked += 1
    assert checked >= 10
    counted = [o for o in ours["ops"] if o["xla_flops"] > 0]
    assert len(counted) >= 4
    assert all(o["hlo_flops"] == o["xla_flops"] for o in counted)
    (peaks,) = {(d["peak_tflops"], d["peak_gbps"], d["peak_source"]) for d in ours["devices"]}
    assert peaks[0] == 918 and peaks[2] == "device"
    # XProf's roofline_model tool: each op's roofline efficiency is our % of its roof, except the
    # halves of asynchronous pairs, which jaxprof leaves unplaced (their time is not the transfer's)
    roofline = xprof_oracle.xprof_numbers(REAL / TPU, ("roofline_model",))["roofline_ops"]
    by_name = {r["name"]: r for r in roofline}
    compared = unplaced = 0
    for op in ours["ops"]:
        r = by_name.get(op["name"])
        if re.search(r"-(start|done)(\.|$)", op["name"]):
            assert op["bound_by"] == "" and op["roof_pct"] == 0
            unplaced += r is not None
        elif r and r["total_us"] and r["total_us"] >= 1:
            assert op["roof_pct"] == pytest.approx(100 * r["efficiency"], rel=1e-4), (op["name"], r)
            compared += 1
    assert compared >= 4 and unplaced >= 8


@pytest.mark.parametrize("name", [p for p in PROFILES if p.startswith("mi300")])
def test_op_names_agree_with_xprof_framework_ops(both, name: str) -> None:
    """Each op's op_name is one XProf gives the same HLO op name (its tf_op_name). Newer JAX writes a
    recompiled module's program id only into its metadata name ("jit_dot(21)"): matched by name
    alone, the MI300 gemm's custom-call.1 got the first compilation's HLO and the op_name
    "XlaModule" (the fallback when no HLO instruction is found)."""
    ours, xprof = both[name]
    theirs = defaultdict(set)  # op name -> XProf's framework ops for it, "" where it found none
    for row in xprof["hlo_ops"] or []:  # in TensorFlow's "name:type" form, the type empty
        theirs[row["name"]].add((row["framework_op"] or "").removesuffix(":"))
    ops = [o for o in jaxprof_json("ops", REAL / name)["ops"] if o["name"] in theirs]
    assert ops
    unresolved = {"XlaModule", ""}  # the event's own tf_op when no HLO instruction is found
    for o in ops:
        mine = "" if o["op_name"] in unresolved else o["op_name"]
        assert mine in theirs[o["name"]], (o["module"], o["name"], o["op_name"], theirs[o["name"]])
    if name == "mi300_jax08_gemm.xplane.pb.gz":
        assert next(o for o in ops if o["name"] == "custom-call.1")["op_name"] == "jit(dot)/dot_general"


# JAX's Chrome traces (vLLM's TPU inference runs) are read too: tests/python/test_chrome_input.py.


def test_tpu_grouped_ops_rate_only_the_ops_that_have_rates() -> None:
    """ops --group sums a group's time over all its ops but its FLOPs and bytes over the ops that
    have rates: an async copy-start lists a whole transfer's bytes against a 2 µs launch, which in
    a sum once gave copy-start 1.4e9 GB/s. A group of async halves only has no rate, as each has."""
    ops = jaxprof_json("ops", REAL / TPU)["ops"]
    assert any(o["gbytes_per_s"] is None and o["bytes"] > 0 for o in ops)  # the halves are there
    for by in ("category", "module"):
        for g in jaxprof_json("ops", REAL / TPU, "--group", by)["ops"]:
            members = [o for o in ops if o[by] == g["name"]]
            rated = [o for o in members if o["gbytes_per_s"] is not None]
            assert g["count"] == sum(o["count"] for o in members)
            assert g["self_ms"] == pytest.approx(sum(o["self_ms"] for o in members), rel=1e-6)
            if not rated:
                assert g["gbytes_per_s"] is None and g["gflops_per_s"] is None, g
                assert g["bytes"] == pytest.approx(sum(o["bytes"] for o in members)), g
                continue
            assert g["bytes"] == pytest.approx(sum(o["bytes"] for o in rated)), g
            want = sum(o["bytes"] for o in rated) / (sum(o["self_ms"] for o in members) * 1e6)
            assert g["gbytes_per_s"] == pytest.approx(want, rel=1e-4), g
            assert g["gbytes_per_s"] < 2000, g  # v6e's HBM is 1638 GB/s; nothing grouped beats it by far
