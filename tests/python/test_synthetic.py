"""Known-answer tests of the GPU and TPU paths on synthetic profiles written by xplane_gen.

Each profile below is laid out by hand on a microsecond timeline (the comments draw it), so every
expected number is derived from the events written here, never from jaxprof's own output.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from conftest import jaxprof_json, run_jaxprof
from xplane_gen import (
    Compressed, Double, HloComputation, HloInstruction, HloModule, Ref, Uint, XSpace, US,
)

PARTS = ["compute_ms", "collective_ms", "h2d_ms", "d2h_ms", "d2d_ms", "compile_ms", "host_ms", "idle_ms"]


def ms(us: float) -> float:
    """Microseconds of the drawn timelines as the milliseconds jaxprof reports."""
    return us / 1000


def approx(v: float) -> Any:
    """Times: JSON prints milliseconds with 6 decimals (nanosecond precision)."""
    return pytest.approx(v, abs=1e-9, rel=1e-6)


def num(v: float) -> Any:
    """Rates, percentages, FLOPs and bytes: JSON prints them with 6 significant digits."""
    return pytest.approx(v, rel=1e-5)


def by(rows: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    out = {r[key]: r for r in rows}
    assert len(out) == len(rows), f"duplicate {key} in {[r[key] for r in rows]}"
    return out


def assert_parts_sum(step: dict[str, Any]) -> None:
    assert sum(step[p] for p in PARTS) == approx(step["duration_ms"]), step


def test_generator_writes_what_jax_reads(tmp_path):
    """The writer itself, checked with JAX's own reader (which knows every stat kind but the
    compressed string)."""
    import jax

    space = XSpace(hostnames=["h"])
    space.hlo_module(PROGRAM_ID, TRAIN_STEP_HLO)
    line = space.plane("/device:GPU:3").line("Stream #2(Compute)", id=2, timestamp_ns=1_000)
    line.span("k", 5, 7.5, {"d": Double(0.25), "u": Uint(2**63), "i": -3, "s": "text", "r": Ref("by ref"),
                            "b": b"raw"})
    line.event("k", offset_ps=10 * US, duration_ps=0)
    path = space.write(tmp_path / "gen.xplane.pb")
    planes = {p.name: p for p in jax.profiler.ProfileData.from_file(str(path)).planes}
    assert set(planes) == {"/host:metadata", "/device:GPU:3"}
    (ln,) = planes["/device:GPU:3"].lines
    assert ln.name == "Stream #2(Compute)"
    first, second = ln.events
    assert (first.name, first.start_ns, first.duration_ns) == ("k", 5_000, 2_500)
    assert (second.start_ns, second.duration_ns) == (1_000 + 10_000, 0)
    stats = dict(first.stats)
    assert stats.pop("b") in (b"raw", "raw")  # JAX hands bytes stats back as text
    assert stats == {"d": 0.25, "u": 2**63, "i": -3, "s": "text", "r": "by ref"}


# =================================================================================================
# GPU: one host thread dispatching two steps to /device:GPU:0.
#
#   us      0    100  150  250  300 360 370 390 400 450      600        1000
#   host    [train step 0 .......................)                       (marker, _r=1 step_num=0)
#                [PjitFunction(train_step) .............)
#   H2D               [MemcpyH2D)                                          stream 14
#   compute                     [gemm)  [epi)   [add)[all-reduce  )         stream 13
#                               \___ dot.1 ___/ fusion.2  all-reduce.3
#
#   us     1000  1100 1120 1160  1400 1450 1510 1530 1580      1730 1740   1800
#   host    [train step 1 .................................................)
#                [PjitF(train_step) ...)
#                    [compile)
#   compute                          [gemm)[epi)[add)[all-reduce)           stream 13
#   D2H                                                          [D2H)      stream 15
# =================================================================================================

PROGRAM_ID = 42
MODULE = "jit_train_step"
GEMM, EPILOGUE = "sm80_xmma_gemm_f32f32_nn", "dot_1_epilogue"
ADD, NCCL = "loop_add_fusion", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
KD_GEMM = "regs:32 static_shared:0 dynamic_shared:1024 grid:8,1,1 block:128,1,1 occ_pct:50.0"
KD_EPILOGUE = "regs:16 static_shared:256 dynamic_shared:0 grid:4,2,1 block:256,1,1 occ_pct:100.0"
KD_ADD = "regs:24 static_shared:0 dynamic_shared:0 grid:64,1,1 block:512,1,1 occ_pct:75.5"
KD_NCCL = "regs:64 static_shared:4096 dynamic_shared:0 grid:2,1,1 block:640,1,1 occ_pct:12.5"
H2D_BYTES, D2H_BYTES = 4194304, 1024

TRAIN_STEP_HLO = HloModule(MODULE, [
    HloComputation("fused_add", 2, [
        HloInstruction("param_0", "parameter"),
        HloInstruction("add.0", "add", op_name="jit(train_step)/jvp(loss)/add"),
    ]),
    HloComputation("main", 1, [
        HloInstruction("dot.1", "dot", op_name="jit(train_step)/jvp(loss)/dense/dot_general",
                       source_file="model.py", source_line=12),
        HloInstruction("fusion.2", "fusion", op_name="jit(train_step)/jvp(loss)/add", source_file="model.py",
                       source_line=13, fusion_kind="kLoop", called_computation_ids=(2,)),
        HloInstruction("all-reduce.3", "all-reduce", op_name="jit(train_step)/psum", source_file="model.py",
                       source_line=30),
    ]),
])


def kernel_stats(op: Any, corr: int, details: Any = None, module: Any = MODULE) -> dict[str, Any]:
    """What XLA's GPU annotations put on a kernel: its HLO op and module, the program id, the
    CUPTI correlation id and the launch configuration."""
    stats: dict[str, Any] = {"hlo_op": op, "hlo_module": module, "program_id": PROGRAM_ID,
                             "correlation_id": Uint(corr)}
    if details is not None:
        stats["kernel_details"] = details
    return stats


def gpu_space() -> XSpace:
    space = XSpace(hostnames=["gpu-host"])
    space.hlo_module(PROGRAM_ID, TRAIN_STEP_HLO)

    host = space.plane("/host:CPU")
    py = host.line("python3", id=4242)
    py.span("train", 0, 500, {"_r": 1, "step_num": 0})
    py.span("PjitFunction(train_step)", 100, 400)
    py.span("train", 1000, 1800, {"_r": 1, "step_num": 1})
    py.span("PjitFunction(train_step)", 1100, 1400)
    py.span("backend_compile_and_load", 1120, 1160)
    # The allocator's instant TraceMes: bytes_allocated is the bytes in use after the event.
    py.instant("MemoryAllocation", 120, {"allocator_name": "GPU_0_bfc", "bytes_allocated": Uint(4194304),
                                         "peak_bytes_in_use": Uint(4194304), "requested_bytes": 4194304})
    py.instant("MemoryAllocation", 310, {"allocator_name": Ref("GPU_0_bfc"), "bytes_allocated": 6291456,
                                         "peak_bytes_in_use": 6291456})
    py.instant("MemoryDeallocation", 600, {"allocator_name": Compressed("GPU_0_bfc"), "bytes_allocated": 2097152,
                                           "peak_bytes_in_use": 6291456})
    py.instant("MemoryAllocation", 1200, {"allocator_name": "cuda_host_bfc", "bytes_allocated": 1024})

    gpu = space.plane("/device:GPU:0")
    # The NCCL kernel's module, program and launch configuration live on its event metadata.
    gpu.event_meta(NCCL, stats={"hlo_module": MODULE, "program_id": PROGRAM_ID, "kernel_details": Ref(KD_NCCL)},
                   display_name="ncclAllReduce", metadata=b"\x08\x01opaque")
    compute = gpu.line("Stream #13(Compute)", id=13, timestamp_ns=100_000)  # offsets relative to 100 us
    h2d = gpu.line("Stream #14(MemcpyH2D)", id=14)
    d2h = gpu.line("Stream #15(MemcpyD2H)", id=15, timestamp_ns=1_000_000)
    # step 0: dot.1's two kernels have a 10 us gap; the op's time is the kernels' sum, 80 us.
    compute.span(GEMM, 300, 360, kernel_stats("dot.1", 1, KD_GEMM))
    compute.span(EPILOGUE, 370, 390, kernel_stats(Ref("dot.1"), 2, Ref(KD_EPILOGUE), Compressed(MODULE)))
    compute.span(ADD, 400, 450, kernel_stats("fusion.2", 3, Compressed(KD_ADD), Ref(MODULE)))
    compute.span(NCCL, 450, 600, {"hlo_op": "all-reduce.3", "correlation_id": Uint(4)})
    # step 1: the same ops back to back; the second GEMM's details come compressed (same text).
    compute.span(GEMM, 1450, 1510, kernel_stats("dot.1", 5, Compressed(KD_GEMM)))
    compute.span(EPILOGUE, 1510, 1530, kernel_stats("dot.1", 6, KD_EPILOGUE))
    compute.span(ADD, 1530, 1580, kernel_stats(Ref("fusion.2"), 7, KD_ADD))
    compute.span(NCCL, 1580, 1730, {"hlo_op": Ref("all-reduce.3"), "correlation_id": Uint(8)})
    h2d.span("MemcpyH2D", 150, 250, {"memcpy_details": Ref(f"kind_src:host kind_dst:device size:{H2D_BYTES} "
                                                            "dest:0 async:1"), "correlation_id": Uint(9)})
    d2h.span("MemcpyD2H", 1730, 1740, {"memcpy_details": f"kind_src:device kind_dst:host size:{D2H_BYTES} "
                                                          "dest:0 async:1", "correlation_id": Uint(10)})
    return space


@pytest.fixture(scope="module")
def gpu_file(tmp_path_factory) -> Path:
    return gpu_space().write(tmp_path_factory.mktemp("gpu") / "gpu-host.xplane.pb")


@pytest.fixture(scope="module")
def gpu_gz(tmp_path_factory) -> Path:
    return gpu_space().write(tmp_path_factory.mktemp("gpu_gz") / "gpu-host.xplane.pb.gz")


def test_gpu_plain_and_gzip_give_the_same_report(gpu_file, gpu_gz):
    plain, gz = jaxprof_json("report", gpu_file), jaxprof_json("report", gpu_gz)
    assert gpu_gz.read_bytes()[:2] == b"\x1f\x8b"
    plain.pop("path"), gz.pop("path")
    assert plain == gz


def test_gpu_devices_and_header(gpu_file):
    doc = jaxprof_json("ops", gpu_file)
    assert doc["platform"] == "gpu" and doc["hosts"] == ["gpu-host"]
    # union of device activity: H2D 150-250, kernels 300-360, 370-390, 400-600, 1450-1740
    busy = 100 + 60 + 20 + 200 + 290
    assert doc["device_busy_ms"] == approx(ms(busy))
    assert doc["span_ms"] == approx(ms(1800))
    assert doc["events"] == 5 + 4 + 8 + 1 + 1  # host spans, allocator instants, kernels, memcpys
    (dev,) = doc["devices"]
    idle = 100 * (1740 - 150 - busy) / (1740 - 150)  # of the device's own first-to-last window
    assert dev == {"name": "/device:GPU:0", "host": "gpu-host", "platform": "gpu", "busy_ms": approx(ms(busy)),
                   "ops": 8, "first_ms": approx(ms(150)), "last_ms": approx(ms(1740)),  # kernels
                   "idle_pct": pytest.approx(idle, abs=1e-4),
                   "peak_tflops": 0, "peak_gbps": 0, "peak_source": "",  # no capability stats written
                   # the kernels and copies carry correlation ids but no host call does: every gap
                   # between them is "other" idle (its launch unknown), nothing is matched
                   "idle_host_ms": 0, "idle_kernel_ms": 0,
                   "idle_other_ms": approx(ms((300 - 250) + (370 - 360) + (400 - 390) + (1450 - 600))),
                   "launched": 0, "short_kernels": 0, "queue_max": 0, "queue_mean": 0,
                   # the all-reduce's two kernels (450-600, 1580-1730) start where the adds end: no
                   # compute beside them, so all exposed; one device, so no wait across devices
                   "collective_ms": approx(ms(150 + 150)), "collective_hidden_ms": 0,
                   "collective_exposed_ms": approx(ms(150 + 150)), "overlap_pct": 0, "collective_wait_ms": 0}
    assert doc["device_idle_pct"] == pytest.approx(idle, abs=1e-4)


def test_gpu_ops_count_kernels_and_carry_hlo_metadata(gpu_file):
    ops = jaxprof_json("ops", gpu_file)["ops"]
    assert [o["name"] for o in ops] == ["all-reduce.3", "dot.1", "fusion.2"]  # by self time
    o = by(ops, "name")
    self_total = 2 * (150 + 80 + 50)
    # dot.1 = GEMM + epilogue per step: 60 + 20 us; each kernel is one occurrence (XProf's count)
    assert {k: o["dot.1"][k] for k in ("count", "total_ms", "self_ms", "avg_ms", "min_ms", "max_ms")} == {
        "count": 4, "total_ms": approx(ms(160)), "self_ms": approx(ms(160)), "avg_ms": approx(ms(40)),
        "min_ms": approx(ms(20)), "max_ms": approx(ms(60))}
    assert o["fusion.2"]["count"] == 2 and o["fusion.2"]["total_ms"] == approx(ms(100))
    assert o["fusion.2"]["self_ms"] == o["fusion.2"]["total_ms"]
    assert o["all-reduce.3"]["count"] == 2 and o["all-reduce.3"]["total_ms"] == approx(ms(300))
    assert o["all-reduce.3"]["self_ms"] == approx(ms(300))
    assert o["all-reduce.3"]["pct_time"] == num(100 * 300 / self_total)
    assert o["dot.1"]["pct_time"] == num(100 * 160 / self_total)
    # from the HloProto on /host:metadata (by program_id): categories, op_name, scope, source
    assert {n: r["category"] for n, r in o.items()} == {
        "all-reduce.3": "collective", "dot.1": "matmul", "fusion.2": "loop fusion"}
    assert o["dot.1"]["op_name"] == "jit(train_step)/jvp(loss)/dense/dot_general"
    assert {n: r["scope"] for n, r in o.items()} == {
        "all-reduce.3": "train_step", "dot.1": "train_step/loss/dense", "fusion.2": "train_step/loss"}
    assert {n: r["source"] for n, r in o.items()} == {
        "all-reduce.3": "model.py:30", "dot.1": "model.py:12", "fusion.2": "model.py:13"}
    assert all(r["module"] == MODULE and r["device"] == "/device:GPU:0" for r in ops)
    assert all(r["flops"] == 0 and r["gflops_per_s"] == 0 for r in ops)  # GPU kernels carry no FLOPs


def test_gpu_kernels_table(gpu_file):
    kernels = jaxprof_json("kernels", gpu_file)["kernels"]
    assert [k["name"] for k in kernels] == [NCCL, GEMM, ADD, EPILOGUE]  # by total time
    k = by(kernels, "name")
    expected = {  # count, total us, regs, static, dynamic, grid, block, occupancy, op
        NCCL: (2, 300, 64, 4096, 0, "2,1,1", "640,1,1", 12.5, "all-reduce.3"),
        GEMM: (2, 120, 32, 0, 1024, "8,1,1", "128,1,1", 50.0, "dot.1"),
        ADD: (2, 100, 24, 0, 0, "64,1,1", "512,1,1", 75.5, "fusion.2"),
        EPILOGUE: (2, 40, 16, 256, 0, "4,2,1", "256,1,1", 100.0, "dot.1"),
    }
    for name, (count, total, regs, static, dynamic, grid, block, occ, op) in expected.items():
        row = k[name]
        assert (row["count"], row["registers"], row["static_shared"], row["dynamic_shared"], row["grid"],
                row["block"], row["occupancy_pct"], row["op"]) == (count, regs, static, dynamic, grid, block,
                                                                    occ, op), name
        assert row["total_ms"] == approx(ms(total)) and row["avg_ms"] == approx(ms(total / count)), name
        assert row["min_ms"] == row["max_ms"] == approx(ms(total / count)), name


def test_gpu_transfers(gpu_file):
    rows = by(jaxprof_json("transfers", gpu_file)["transfers"], "kind")
    assert rows["H2D"] == {"kind": "H2D", "count": 1, "bytes": H2D_BYTES, "total_ms": approx(ms(100)),
                           "max_ms": approx(ms(100)), "gbytes_per_s": num(H2D_BYTES / 100e-6 / 1e9)}
    assert rows["D2H"] == {"kind": "D2H", "count": 1, "bytes": D2H_BYTES, "total_ms": approx(ms(10)),
                           "max_ms": approx(ms(10)), "gbytes_per_s": num(D2H_BYTES / 10e-6 / 1e9)}
    assert rows["D2D"]["count"] == 0 and rows["D2D"]["bytes"] == 0


def test_gpu_steps_and_breakdown(gpu_file):
    doc = jaxprof_json("steps", gpu_file)
    s0, s1 = doc["steps"]
    # step 0 runs from its marker to the next one: 0-1000 us.
    #   idle 0-100, host 100-150, H2D 150-250 (over host), host 250-300, compute 300-360, host 360-370,
    #   compute 370-390, host 390-400, compute 400-450, collective 450-600, idle 600-1000
    assert s0["step"] == 0 and s0["start_ms"] == 0 and s0["duration_ms"] == approx(ms(1000))
    assert {p: s0[p] for p in PARTS} == {
        "compute_ms": approx(ms(60 + 20 + 50)), "collective_ms": approx(ms(150)), "h2d_ms": approx(ms(100)),
        "d2h_ms": 0, "d2d_ms": 0, "compile_ms": 0, "host_ms": approx(ms(50 + 50 + 10 + 10)),
        "idle_ms": approx(ms(100 + 400))}
    # step 1 is the last: its marker (1000-1800) holds all its device work (1450-1740).
    #   idle 1000-1100, host 1100-1120, compile 1120-1160, host 1160-1400, idle 1400-1450,
    #   compute 1450-1580, collective 1580-1730, D2H 1730-1740, idle 1740-1800
    assert s1["step"] == 1 and s1["start_ms"] == approx(ms(1000)) and s1["duration_ms"] == approx(ms(800))
    assert {p: s1[p] for p in PARTS} == {
        "compute_ms": approx(ms(130)), "collective_ms": approx(ms(150)), "h2d_ms": 0, "d2h_ms": approx(ms(10)),
        "d2d_ms": 0, "compile_ms": approx(ms(40)), "host_ms": approx(ms(20 + 240)),
        "idle_ms": approx(ms(100 + 50 + 60))}
    for s in (s0, s1):
        assert_parts_sum(s)
        assert s["ops"] == 4  # occurrences (kernels) starting in the step
        assert s["outlier"] is False
    assert (s0["compiles"], s1["compiles"]) == (0, 1)
    summary = doc["step_summary"]
    assert summary["method"] == "StepTraceAnnotation" and summary["count"] == 2
    assert summary["total_ms"] == approx(ms(1800)) and summary["mean_ms"] == approx(ms(900))
    assert summary["min_ms"] == approx(ms(800)) and summary["max_ms"] == approx(ms(1000))
    assert summary["breakdown_ms"]["collective"] == approx(ms(300))
    assert sum(summary["breakdown_ms"].values()) == approx(summary["total_ms"])


def test_gpu_compiles(gpu_file):
    (c,) = jaxprof_json("compiles", gpu_file)["compiles"]
    assert c == {"module": MODULE, "name": "backend_compile_and_load", "start_ms": approx(ms(1120)),
                 "duration_ms": approx(ms(40)), "step": 1, "steady_state": True}


def test_gpu_memory(gpu_file):
    doc = jaxprof_json("memory", gpu_file)
    rows = by(doc["memory"], "allocator")
    assert rows["GPU_0_bfc"] == {"allocator": "GPU_0_bfc", "peak_bytes": 6291456, "peak_at_ms": approx(ms(310)),
                                 "events": 3, "allocator_peak_bytes": 6291456}
    assert rows["cuda_host_bfc"] == {"allocator": "cuda_host_bfc", "peak_bytes": 1024,
                                     "peak_at_ms": approx(ms(1200)), "events": 1, "allocator_peak_bytes": 0}
    assert doc["memory_timeline"]["GPU_0_bfc"] == [[approx(ms(120)), 4194304], [approx(ms(310)), 6291456],
                                                   [approx(ms(600)), 2097152]]


def test_gpu_device_scopes_from_op_names(gpu_file):
    scopes = jaxprof_json("scopes", gpu_file)["scopes"]
    device = by([s for s in scopes if s["kind"] == "device"], "scope")
    # an op's self time counts toward its scope and every enclosing one
    assert {p: (s["count"], s["depth"]) for p, s in device.items()} == {
        "train_step": (8, 0), "train_step/loss": (6, 1), "train_step/loss/dense": (4, 2)}  # kernels
    assert device["train_step"]["total_ms"] == approx(ms(560))
    assert device["train_step"]["self_ms"] == approx(ms(300))
    assert device["train_step/loss"]["total_ms"] == approx(ms(260))
    assert device["train_step/loss"]["self_ms"] == approx(ms(100))
    assert device["train_step/loss/dense"]["total_ms"] == device["train_step/loss/dense"]["self_ms"]
    assert device["train_step/loss/dense"]["total_ms"] == approx(ms(160))
    host = by([s for s in scopes if s["kind"] != "device"], "scope")
    pjit = host["PjitFunction(train_step)"]
    assert pjit["kind"] == "runtime" and pjit["count"] == 2
    assert pjit["total_ms"] == approx(ms(600)) and pjit["self_ms"] == approx(ms(600 - 40))
    assert "train" not in host  # step markers are steps, not scopes


def test_gpu_views_top_sort_filter(gpu_file):
    top = jaxprof_json("ops", gpu_file, "--top", "2")["ops"]
    assert [o["name"] for o in top] == ["all-reduce.3", "dot.1"]
    assert [o["name"] for o in jaxprof_json("ops", gpu_file, "--sort", "name")["ops"]] == [
        "all-reduce.3", "dot.1", "fusion.2"]
    assert [o["name"] for o in jaxprof_json("ops", gpu_file, "--sort", "total", "--top", "1")["ops"]] == [
        "all-reduce.3"]
    only = jaxprof_json("ops", gpu_file, "--filter", "train_step/loss")["ops"]
    assert sorted(o["name"] for o in only) == ["dot.1", "fusion.2"]
    kernels = jaxprof_json("kernels", gpu_file, "--sort", "registers", "--filter", "^(sm80|dot_1)")["kernels"]
    assert [k["name"] for k in kernels] == [GEMM, EPILOGUE]  # 32 registers, then 16
    assert jaxprof_json("ops", gpu_file, "--filter", "no-such-op")["ops"] == []


def test_gpu_csv(gpu_file):
    proc = run_jaxprof("transfers", gpu_file, "--csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert proc.stdout.splitlines()[0] == "kind,count,bytes,total_ms,max_ms,gbytes_per_s"
    assert [(r["kind"], int(r["count"]), int(r["bytes"]), float(r["total_ms"])) for r in rows] == [
        ("H2D", 1, H2D_BYTES, ms(100)), ("D2H", 1, D2H_BYTES, ms(10)), ("D2D", 0, 0, 0.0)]
    proc = run_jaxprof("ops", gpu_file, "--csv", "--top", "1")
    assert proc.returncode == 0, proc.stderr
    (row,) = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert row["name"] == "all-reduce.3" and row["category"] == "collective" and int(row["count"]) == 2
    assert float(row["total_ms"]) == approx(ms(300)) and row["scope"] == "train_step"


def test_gpu_report_json_has_every_section(gpu_file):
    doc = jaxprof_json("report", gpu_file)
    assert {"devices", "step_summary", "kpis", "ops", "steps", "scopes", "kernels", "memory", "transfers",
            "compiles", "findings", "memory_timeline"} <= set(doc)
    kpis = by(doc["kpis"], "name")
    # device parts of the steps (compute, collective, transfers) over the summed step time
    assert kpis["device utilization"]["value"] == num(100 * (260 + 300 + 100 + 10) / 1800)
    # mean kernel launch: (300 + 120 + 100 + 40) us over 8 launches
    assert kpis["kernel duration"]["value"] == num(ms(560 / 8))
    assert kpis["compilation time"]["value"] == num(40e-6)
    assert "recompilation" in {f["id"] for f in doc["findings"]}  # compiled in step 1, after the first


# =================================================================================================
# GPU details that real CUPTI profiles contain.
# =================================================================================================


def one_step_gpu(events) -> XSpace:
    """A one-step GPU profile; `events(stream)` writes the device events under test."""
    space = XSpace()
    space.hlo_module(PROGRAM_ID, TRAIN_STEP_HLO)
    py = space.plane("/host:CPU").line("python3", id=1)
    py.span("train", 0, 1000, {"_r": 1, "step_num": 7})
    gpu = space.plane("/device:GPU:0")
    events(gpu)
    return space


def test_gpu_small_kernels_are_counted(tmp_path):
    """150 launches per step, 120 of them under 0.1 ms: the 'many small kernels' finding."""
    space = XSpace()
    py = space.plane("/host:CPU").line("python3", id=1)
    stream = space.plane("/device:GPU:0").line("Stream #7(Compute)", id=7)
    for step in range(2):
        py.span("train", step * 10_000, (step + 1) * 10_000, {"_r": 1, "step_num": step})
        t = step * 10_000
        for i in range(150):
            dur = 10 if i % 5 else 200  # 120 kernels of 10 us, 30 of 200 us
            name = "tiny_kernel" if dur == 10 else "big_kernel"
            stream.span(name, t, t + dur, {"hlo_op": f"op.{i}", "hlo_module": "jit_many"})
            t += dur
    path = space.write(tmp_path / "small.xplane.pb")
    doc = jaxprof_json("findings", path)
    small = [f for f in doc["findings"] if f["id"] == "many_small_ops"]
    assert len(small) == 1
    assert "150 kernels per step, 80% of them under 0.1 ms" in small[0]["evidence"]
    k = by(jaxprof_json("kernels", path)["kernels"], "name")
    assert k["tiny_kernel"]["count"] == 240 and k["big_kernel"]["count"] == 60
    assert k["big_kernel"]["total_ms"] == approx(ms(60 * 200))


def test_gpu_transfer_kind_from_details(tmp_path):
    """CUPTI names copies between pinned or pageable host memory and the device 'MemcpyOther' at
    times; memcpy_details' memory kinds then say the direction (pinned and pageable are host)."""
    def events(gpu):
        s = gpu.line("Stream #20(MemcpyOther)", id=20)
        s.span("MemcpyOther", 100, 110, {"memcpy_details": Ref("kind_src:pinned kind_dst:device size:100 dest:0 async:1")})
        s.span("MemcpyOther", 200, 220, {"memcpy_details": Ref("kind_src:device kind_dst:pageable size:200 dest:0 async:0")})
        s.span("MemcpyOther", 300, 340, {"memcpy_details": Ref("kind_src:device kind_dst:device size:300 dest:0 async:1")})
        s.span("MemcpyP2P", 400, 480, {"memcpy_details": Ref("kind_src:device kind_dst:device size:400 dest:1 async:1")})
        s.span("MemcpyH2D", 500, 501, {"memcpy_details": "kind_src:pageable kind_dst:device size:5 dest:0 async:0"})
    path = one_step_gpu(events).write(tmp_path / "xfer.xplane.pb")
    rows = by(jaxprof_json("transfers", path)["transfers"], "kind")
    assert (rows["H2D"]["count"], rows["H2D"]["bytes"], rows["H2D"]["total_ms"]) == (2, 105, approx(ms(11)))
    assert (rows["D2H"]["count"], rows["D2H"]["bytes"], rows["D2H"]["total_ms"]) == (1, 200, approx(ms(20)))
    assert (rows["D2D"]["count"], rows["D2D"]["bytes"], rows["D2D"]["total_ms"]) == (2, 700, approx(ms(120)))
    assert jaxprof_json("kernels", path)["kernels"] == []


def test_gpu_non_kernel_activity_is_not_a_kernel(tmp_path):
    """CUPTI also records allocations, frees and residency changes (with *_details stats) and its own
    overhead (on a 'CUPTI overhead' line): none of them is a kernel or an HLO op. A memset is device
    work attributed to its HLO op, but not a kernel launch."""
    def events(gpu):
        s = gpu.line("Stream #13(Compute,Memset)", id=13)
        s.span("MemoryAlloc", 10, 12, {"memalloc_details": Ref("kind:device num_bytes:1048576")})
        s.span(GEMM, 100, 300, kernel_stats("dot.1", 1, KD_GEMM))
        s.span("Memset", 300, 320, {"memset_details": Ref("kind:device num_bytes:4096 async:1"),
                                    "hlo_op": "fusion.2", "hlo_module": MODULE, "program_id": PROGRAM_ID})
        s.span("MemoryFree", 400, 401, {"memfree_details": Ref("kind:device num_bytes:1048576")})
        s.span("MemoryResidency", 410, 411, {"memory_residency_details": Ref("kind:device num_bytes:64 addr:0x0")})
        gpu.line("CUPTI overhead", id=-1).span("Overhead", 500, 900, {})
    path = one_step_gpu(events).write(tmp_path / "noise.xplane.pb")
    kernels = jaxprof_json("kernels", path)["kernels"]
    assert [k["name"] for k in kernels] == [GEMM]
    doc = jaxprof_json("ops", path)
    o = by(doc["ops"], "name")
    assert set(o) == {"dot.1", "fusion.2"}
    assert o["fusion.2"]["total_ms"] == approx(ms(20)) and o["fusion.2"]["category"] == "loop fusion"
    assert doc["devices"][0]["busy_ms"] == approx(ms(220))
    (step,) = jaxprof_json("steps", path)["steps"]
    assert step["compute_ms"] == approx(ms(220)) and step["idle_ms"] == approx(ms(780))


def test_gpu_aggregated_events_stay_off_the_timeline(tmp_path):
    """An event with num_occurrences has no offset: it cannot be placed in a step or a stream's
    timeline, so it must not appear at the line's start as a kernel."""
    def events(gpu):
        s = gpu.line("Stream #13(Compute)", id=13, timestamp_ns=0)
        s.span(GEMM, 100, 300, kernel_stats("dot.1", 1, KD_GEMM))
        s.aggregated(GEMM, num_occurrences=5, duration_ps=500 * US, stats=kernel_stats("dot.1", 2, KD_GEMM))
    path = one_step_gpu(events).write(tmp_path / "agg.xplane.pb")
    doc = jaxprof_json("ops", path)
    assert doc["devices"][0]["first_ms"] == approx(ms(100)) and doc["devices"][0]["busy_ms"] == approx(ms(200))
    (dot,) = doc["ops"]
    assert dot["count"] == 1 and dot["total_ms"] == approx(ms(200))


def test_gpu_run_ids_separate_back_to_back_executions(tmp_path):
    """A one-op module run twice back to back: when kernels carry run_id, the two executions are
    two occurrences even though the same op's kernels follow each other on the stream."""
    def events(gpu):
        s = gpu.line("Stream #13(Compute)", id=13)
        for run, start in ((1, 100), (2, 200)):
            s.span(ADD, start, start + 100, {**kernel_stats("fusion.2", run, KD_ADD), "run_id": run})
    path = one_step_gpu(events).write(tmp_path / "runs.xplane.pb")
    (op,) = jaxprof_json("ops", path)["ops"]
    assert op["count"] == 2 and op["total_ms"] == approx(ms(200)) and op["max_ms"] == approx(ms(100))


# =================================================================================================
# TPU: two chips running the same program in lockstep; libtpu writes Steps, XLA Modules and XLA Ops.
#
#   us        0   100     300  350    550  600  700     900  1000  1100     1200
#   Steps     [3 .....................................................)
#   Modules       [jit_train_step(7) ....................................)
#   XLA Ops       [fusion.1)[while.1 ...........................)[ar.4)
#                           [dot.2 .....)    [add.3)
#   ... and the same again 1200 us later as step 4.
# =================================================================================================

TPU_PROGRAM = 7
TPU_HLO = HloModule("jit_train_step", [
    HloComputation("body", 3, [
        HloInstruction("dot.2", "dot", op_name="jit(train_step)/while/body/dense/dot_general"),
        HloInstruction("add.3", "add", op_name="jit(train_step)/while/body/add"),
    ]),
    HloComputation("main", 1, [
        HloInstruction("fusion.1", "fusion", op_name="jit(train_step)/prep/mul", fusion_kind="kLoop"),
        HloInstruction("while.1", "while", op_name="jit(train_step)/while", called_computation_ids=(3,)),
        HloInstruction("all-reduce.4", "all-reduce", op_name="jit(train_step)/psum"),
    ]),
])
# per-occurrence costs, on the XLA Ops event metadata as libtpu writes them
FLOPS = {"fusion.1": 1_000_000, "dot.2": 2e9}
BYTES = {"fusion.1": 4_000_000, "dot.2": 8_000_000}


def tpu_chip(space: XSpace, index: int, all_reduce_category: str = "") -> None:
    tpu = space.plane(f"/device:TPU:{index}")
    if all_reduce_category:
        tpu.event_meta("all-reduce.4", stats={"hlo_category": all_reduce_category})
    tpu.stats({"peak_teraflops_per_second": Double(197.0), "peak_hbm_bw_gigabytes_per_second": Double(819.0)})
    tpu.event_meta("fusion.1", stats={"flops": Uint(FLOPS["fusion.1"]), "bytes_accessed": Uint(BYTES["fusion.1"]),
                                      "hlo_category": "loop fusion"})
    tpu.event_meta("dot.2", stats={"flops": Double(FLOPS["dot.2"]), "bytes_accessed": BYTES["dot.2"],
                                   "hlo_category": Ref("convolution")})
    steps = tpu.line("Steps", id=1)
    modules = tpu.line("XLA Modules", id=2)
    ops = tpu.line("XLA Ops", id=3, timestamp_ns=50_000)
    for step, base in ((3, 0), (4, 1200)):
        steps.span(str(step), base, base + 1200, {"group_id": step})
        modules.span(f"jit_train_step({TPU_PROGRAM})", base + 100, base + 1100, {"run_id": Uint(step)})
        ops.span("fusion.1", base + 100, base + 300)
        ops.span("while.1", base + 300, base + 900)
        ops.span("dot.2", base + 350, base + 550)
        ops.span("add.3", base + 600, base + 700)
        ops.span("all-reduce.4", base + 900, base + 1000)


def tpu_space(chips: int = 2) -> XSpace:
    space = XSpace(hostnames=["tpu-host"])
    space.hlo_module(TPU_PROGRAM, TPU_HLO)
    for i in range(chips):
        tpu_chip(space, i)
    return space


@pytest.fixture(scope="module")
def tpu_file(tmp_path_factory) -> Path:
    return tpu_space().write(tmp_path_factory.mktemp("tpu") / "tpu-host.xplane.pb.gz")


def test_tpu_ops_nesting_flops_and_categories(tpu_file):
    doc = jaxprof_json("ops", tpu_file, "--device", "0")
    assert doc["platform"] == "tpu" and [d["name"] for d in doc["devices"]] == ["/device:TPU:0"]
    ops = doc["ops"]
    assert [o["name"] for o in ops][:1] == ["while.1"]
    o = by(ops, "name")
    assert {n: (r["count"], r["total_ms"], r["self_ms"]) for n, r in o.items()} == {
        "fusion.1": (2, approx(ms(400)), approx(ms(400))),
        "while.1": (2, approx(ms(1200)), approx(ms(2 * (600 - 200 - 100)))),  # minus dot.2 and add.3
        "dot.2": (2, approx(ms(400)), approx(ms(400))),
        "add.3": (2, approx(ms(200)), approx(ms(200))),
        "all-reduce.4": (2, approx(ms(200)), approx(ms(200))),
    }
    assert {n: r["category"] for n, r in o.items()} == {
        "fusion.1": "loop fusion", "while.1": "control flow", "dot.2": "convolution",  # hlo_category wins
        "add.3": "elementwise", "all-reduce.4": "collective"}
    for name in ("fusion.1", "dot.2"):  # summed over occurrences; rates over the op's total time
        assert o[name]["flops"] == num(2 * FLOPS[name]) and o[name]["bytes"] == num(2 * BYTES[name])
        assert o[name]["gflops_per_s"] == num(2 * FLOPS[name] / 400e-6 / 1e9)
        assert o[name]["gbytes_per_s"] == num(2 * BYTES[name] / 400e-6 / 1e9)
    assert o["while.1"]["flops"] == 0
    assert all(r["module"] == "jit_train_step" for r in ops)  # from the XLA Modules line
    assert o["dot.2"]["scope"] == "train_step/while/body/dense"
    assert o["while.1"]["pct_time"] == num(100 * 600 / 1800)
    (dev,) = doc["devices"]
    assert dev["busy_ms"] == approx(ms(2 * 900)) and dev["ops"] == 10
    assert (dev["first_ms"], dev["last_ms"]) == (approx(ms(100)), approx(ms(2200)))


def test_tpu_steps_from_the_steps_line(tpu_file):
    doc = jaxprof_json("steps", tpu_file)
    assert doc["step_summary"]["method"] == "device Steps line"
    # every chip's Steps line names the same steps: one row per step, not one per chip
    assert [s["step"] for s in doc["steps"]] == [3, 4]
    for s, base in zip(doc["steps"], (0, 1200)):
        assert s["start_ms"] == approx(ms(base)) and s["duration_ms"] == approx(ms(1200))
        # idle 0-100, compute 100-900 (fusion.1, while.1 and its children), collective 900-1000, idle
        assert {p: s[p] for p in PARTS} == {
            "compute_ms": approx(ms(800)), "collective_ms": approx(ms(100)), "h2d_ms": 0, "d2h_ms": 0,
            "d2d_ms": 0, "compile_ms": 0, "host_ms": 0, "idle_ms": approx(ms(300))}
        assert_parts_sum(s)
        assert s["ops"] == 2 * 5  # both chips' op occurrences
    one = jaxprof_json("steps", tpu_file, "--device", "TPU:1")
    assert [s["step"] for s in one["steps"]] == [3, 4] and one["steps"][0]["ops"] == 5


def test_tpu_kpis_use_the_plane_peaks(tpu_file):
    kpis = by(jaxprof_json("findings", tpu_file, "--device", "0")["kpis"], "name")
    assert kpis["device utilization"]["value"] == num(100 * 900 / 1200)
    # bytes accessed over the device's busy time, against peak_hbm_bw_gigabytes_per_second
    bytes_accessed = 2 * (BYTES["fusion.1"] + BYTES["dot.2"])
    assert kpis["memory bandwidth"]["value"] == num(100 * bytes_accessed / 1800e-6 / 819e9)
    assert kpis["op duration"]["value"] == num(ms(1800 / 10))  # mean self time of an occurrence


def test_tpu_device_filter(tpu_file):
    both = jaxprof_json("ops", tpu_file)
    assert [d["name"] for d in both["devices"]] == ["/device:TPU:0", "/device:TPU:1"]
    # by default each op is one row summed over both chips; --device gives one chip's rows
    assert len(both["ops"]) == 5 and {(o["device"], o["devices"]) for o in both["ops"]} == {("", 2)}
    for flag, name in (("1", "/device:TPU:1"), ("TPU:0", "/device:TPU:0")):
        doc = jaxprof_json("ops", tpu_file, "--device", flag)
        assert [d["name"] for d in doc["devices"]] == [name]
        assert len(doc["ops"]) == 5 and {(o["device"], o["devices"]) for o in doc["ops"]} == {(name, 1)}
        assert {o["name"]: 2 * o["count"] for o in doc["ops"]} == {o["name"]: o["count"] for o in both["ops"]}
    # a filter that matches no device is a mistake (not an idle profile): exit 2 naming what exists
    for flag in ("GPU", "5"):
        proc = run_jaxprof("ops", str(tpu_file), "--device", flag)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == f"jaxprof: no device matches '{flag}' (devices: /device:TPU:0, /device:TPU:1)\n"


def test_tpu_host_filter_on_a_run_directory(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2024_01_01_00_00_00"
    run.mkdir(parents=True)
    tpu_space(chips=1).write(run / "worker0.xplane.pb")
    tpu_space(chips=1).write(run / "worker1.xplane.pb.gz")
    both = jaxprof_json("steps", run)
    assert both["hosts"] == ["worker0", "worker1"]
    assert [(d["name"], d["host"]) for d in both["devices"]] == [
        ("/device:TPU:0", "worker0"), ("/device:TPU:0", "worker1")]
    assert [s["step"] for s in both["steps"]] == [3, 4]  # one step across hosts
    one = jaxprof_json("ops", tmp_path, "--host", "worker1")  # a log directory: its newest run
    assert one["hosts"] == ["worker1"] and [d["host"] for d in one["devices"]] == ["worker1"]
    assert sum(o["count"] for o in one["ops"]) == 10
    missing = run_jaxprof("ops", run, "--host", "nobody")
    assert missing.returncode == 2 and "no host matches 'nobody'" in missing.stderr


def test_tpu_csv_ops(tpu_file):
    proc = run_jaxprof("ops", tpu_file, "--csv", "--device", "0", "--filter", "^dot", "--sort", "flops")
    assert proc.returncode == 0, proc.stderr
    (row,) = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert row["name"] == "dot.2" and row["category"] == "convolution"
    assert float(row["flops"]) == num(4e9) and float(row["gflops_per_s"]) == num(1e4)


# =================================================================================================
# Regressions: bugs these synthetic layouts exposed outside the device-plane code, now fixed.
# =================================================================================================


def test_tpu_collective_hlo_category_counts_as_collective(tmp_path):
    space = XSpace()
    space.hlo_module(TPU_PROGRAM, TPU_HLO)
    tpu_chip(space, 0, all_reduce_category="all-reduce")  # what libtpu writes for an all-reduce
    path = space.write(tmp_path / "tpu.xplane.pb")
    for s in jaxprof_json("steps", path)["steps"]:
        assert s["collective_ms"] == approx(ms(100)) and s["compute_ms"] == approx(ms(800))


def test_gpu_last_step_keeps_its_asynchronous_device_work(tmp_path):
    # Each step's marker closes at +200 us once the host queued the work; the kernel runs +300..+800.
    space = XSpace()
    py = space.plane("/host:CPU").line("python3", id=1)
    stream = space.plane("/device:GPU:0").line("Stream #7(Compute)", id=7)
    for step in range(2):
        base = step * 1000
        py.span("train", base, base + 200, {"_r": 1, "step_num": step})
        py.span("PjitFunction(f)", base + 50, base + 150)
        stream.span(ADD, base + 300, base + 800, {"hlo_op": "fusion.1", "hlo_module": "jit_f"})
    path = space.write(tmp_path / "async.xplane.pb")
    s0, s1 = jaxprof_json("steps", path)["steps"]
    assert s0["duration_ms"] == approx(ms(1000)) and s0["compute_ms"] == approx(ms(500))
    assert s1["duration_ms"] == approx(ms(800)) and s1["compute_ms"] == approx(ms(500))


def test_gpu_cuda_driver_calls_are_runtime_not_user_scopes(tmp_path):
    space = XSpace()
    py = space.plane("/host:CPU").line("python3", id=1)
    py.span("train", 0, 1000, {"_r": 1, "step_num": 0})
    py.span("PjitFunction(train_step)", 100, 500)
    py.span("cuLaunchKernel", 200, 210, {"correlation_id": Uint(5)})
    path = space.write(tmp_path / "driver.xplane.pb")
    scopes = by(jaxprof_json("scopes", path)["scopes"], "scope")
    assert scopes["cuLaunchKernel"]["kind"] == "runtime"


@pytest.mark.parametrize("compile_at", [700, 1050])
def test_a_step_window_counts_no_compile_after_its_marker(tmp_path, compile_at):
    # The host runs ahead: each step's marker closes at +200 us, step 0's kernel runs on to +900 us.
    # The whole run gives a compile between markers (700 us) to step 0, whose span holds it, and one
    # inside step 1's marker (1050 us) to step 1. A window of step 0 alone cannot tell a later
    # step's marker from the gap after its own, so it counts neither (a device-bound loop's step
    # window took a later step's compile this way); a step's window counts its own marker's.
    space = XSpace()
    py = space.plane("/host:CPU").line("python3", id=1)
    stream = space.plane("/device:GPU:0").line("Stream #7(Compute)", id=7)
    for step in range(3):
        py.span("train", step * 1000, step * 1000 + 200, {"_r": 1, "step_num": step})
        py.span("PjitFunction(f)", step * 1000 + 50, step * 1000 + 150)
        stream.span(ADD, step * 1000 + 300, step * 1000 + 900, {"hlo_op": "fusion.1", "hlo_module": "jit_f"})
    py.span("backend_compile_and_load", compile_at, compile_at + 50)
    path = space.write(tmp_path / "ahead.xplane.pb")
    full = [s["compiles"] for s in jaxprof_json("steps", path)["steps"]]
    assert full == ([1, 0, 0] if compile_at < 1000 else [0, 1, 0])
    windows = [jaxprof_json("steps", path, "--steps", f"{n}:{n}")["steps"][0]["compiles"] for n in range(3)]
    assert windows == [0, 0, 0] if compile_at < 1000 else windows == full


def test_gpu_breakdown_is_each_instants_top_part_over_tangled_spans(tmp_path):
    """The step breakdown on spans that nest, overlap, touch, repeat and last no time, on three
    streams: each microsecond goes to the highest-priority part whose spans cover it (compute >
    collective > H2D > D2H > host), counted here from the drawn events alone. The sweep merges each
    part's spans first, so this pins that the merge changes nothing."""
    import random
    rng = random.Random(34)
    drawn: list[tuple[int, int, str]] = []  # (start, end, part) in us
    space = XSpace()
    space.hlo_module(PROGRAM_ID, TRAIN_STEP_HLO)
    py = space.plane("/host:CPU").line("python3", id=1)
    gpu = space.plane("/device:GPU:0")
    streams = [gpu.line(f"Stream #{7 + i}(Compute)", id=7 + i) for i in range(3)]
    h2d = gpu.line("Stream #20(MemcpyH2D)", id=20)
    d2h = gpu.line("Stream #21(MemcpyD2H)", id=21)
    corr = 0
    for step in range(3):
        t0 = step * 1000
        py.span("train", t0, t0 + 1000, {"_r": 1, "step_num": step})
        py.span("PjitFunction(train_step)", t0 + 10, t0 + 60)
        drawn.append((t0 + 10, t0 + 60, "host"))
        for line in streams:
            spans = []
            for _ in range(12):
                a = t0 + rng.randrange(50, 900)
                spans.append((a, a + rng.choice([0, 5, 20, 80, 200])))
            spans += [(spans[0][1], spans[0][1] + 30), spans[1]]  # one touching, one repeated
            for a, b in sorted(spans):  # a line's events in time order, as XLA writes them
                corr += 1
                op, part = rng.choice([("dot.1", "compute"), ("fusion.2", "compute"), ("all-reduce.3", "collective")])
                line.span(NCCL if op == "all-reduce.3" else GEMM, a, b, kernel_stats(op, corr))
                drawn.append((a, b, part))
        for line, kind, part in ((h2d, "host kind_dst:device", "h2d"), (d2h, "device kind_dst:host", "d2h")):
            for _ in range(3):
                a = t0 + rng.randrange(40, 950)
                b = a + rng.choice([1, 10, 40])
                corr += 1
                line.span(f"Memcpy{part.upper()}", a, b,
                          {"memcpy_details": f"kind_src:{kind} size:4096 dest:0 async:1", "correlation_id": Uint(corr)})
                drawn.append((a, b, part))
    steps = jaxprof_json("steps", space.write(tmp_path / "tangled.xplane.pb"))["steps"]
    assert len(steps) == 3
    order = ["compute", "collective", "h2d", "d2h", "host"]
    for s in steps:
        lo, hi = round(s["start_ms"] * 1000), round((s["start_ms"] + s["duration_ms"]) * 1000)
        want = dict.fromkeys(order + ["idle"], 0)
        for t in range(lo, hi):
            open_parts = {p for a, b, p in drawn if a <= t < b}
            want[next((p for p in order if p in open_parts), "idle")] += 1
        got = {p: s[f"{p}_ms"] for p in order + ["idle"]}
        assert got == {p: approx(ms(v)) for p, v in want.items()}, s["step"]
        assert s["d2d_ms"] == 0 and s["compile_ms"] == 0
