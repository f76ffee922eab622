"""The real NVIDIA captures of tests/data/gpu (H200, JAX 0.11.2; README there). Truth comes from
outside jaxprof: the program's own step timer and XLA's cost analysis (meta.json), the raw events
read with jax.profiler.ProfileData, and XLA's own hlo_op labels on the kernels of the capture made
with command buffers off."""
from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from jax.profiler import ProfileData

from conftest import jaxprof_json, run_jaxprof
from hlo_truth import _fields
from xplane_gen import f_bytes, f_varint, tag

GPU = Path(__file__).resolve().parents[1] / "data" / "gpu"
META = json.loads((GPU / "meta.json").read_text())
CAPTURES = sorted(GPU.glob("*.xplane.pb.gz"))


def raw_device_events(path: Path) -> list[tuple[str, int, int, dict[str, Any]]]:
    """(name, start ns, duration ns, stats) of every event on the GPU planes' stream lines."""
    data = path.read_bytes()
    pd = ProfileData.from_serialized_xspace(gzip.decompress(data) if path.suffix == ".gz" else data)
    return [(e.name, e.start_ns, e.duration_ns, dict(e.stats))
            for p in pd.planes if p.name.startswith("/device:GPU") for line in p.lines for e in line.events]


def is_copy_or_memset(name: str) -> bool:
    return name.startswith(("Memcpy", "Memset"))


@pytest.mark.parametrize("path", [p for p in CAPTURES if p.name.split(".")[0] in META],
                         ids=lambda p: p.name.split(".")[0])
def test_steps_are_the_programs_own_step_times(path: Path) -> None:
    """Each StepTraceAnnotation step lasts what the program timed around it (a blocking step), to
    0.1 ms: the step ends at the marker's end, not at the device's last kernel."""
    walls = META[path.name.split(".")[0]]["step_wall_ms"]
    steps = jaxprof_json("steps", path)["steps"]
    assert [s["step"] for s in steps] == list(range(len(walls)))
    for s, wall in zip(steps, walls):
        assert s["duration_ms"] == pytest.approx(wall, abs=0.1)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name.split(".")[0])
def test_kernels_are_the_raw_kernel_events(path: Path) -> None:
    """The kernels table counts every kernel event and no memset ("Memset 3" as JAX 0.11 names
    them) or copy, as XProf's kernel_stats does."""
    raw = [e for e in raw_device_events(path) if not is_copy_or_memset(e[0])]
    kernels = jaxprof_json("kernels", path)["kernels"]
    assert sum(k["count"] for k in kernels) == len(raw)
    assert sum(k["total_ms"] for k in kernels) == pytest.approx(sum(e[2] for e in raw) / 1e6, rel=1e-6)


def test_command_buffer_kernels_are_named_by_their_instruction() -> None:
    """With command buffers on (XLA's default), every kernel of the train step ran inside a CUDA
    graph and carries the graph's name (hlo_op command_buffer_1): XProf's op tables are empty.
    jaxprof names each by the HLO instruction it ran; the op table keeps all the device time."""
    path = GPU / "h200_transformer_cb.xplane.pb.gz"
    raw = [e for e in raw_device_events(path) if not e[0].startswith("Memcpy")]
    assert {e[3].get("hlo_op") for e in raw if e[3].get("hlo_module") == "jit_train_step"} == {"command_buffer_1"}
    ops = jaxprof_json("ops", path)["ops"]
    assert not [o for o in ops if o["name"].startswith("command_buffer")]
    assert len(ops) == 448  # the schedule's instructions that run on the device, as in the nocb capture
    assert sum(o["count"] for o in ops) == len(raw)
    assert sum(o["self_ms"] for o in ops) == pytest.approx(sum(e[2] for e in raw) / 1e6, rel=1e-6)


# ---- a command-buffer capture made from the one with XLA's own labels ------------------------------

def _enc(num: int, wire: int, value: Any) -> bytes:
    """One field as _fields read it (a varint, a length-delimited value, or fixed bytes)."""
    if wire == 0:
        return f_varint(num, value)
    return f_bytes(num, value) if wire == 2 else tag(num, wire) + value


def as_command_buffer(data: bytes, module: str, executions: int) -> bytes:
    """The XSpace with every device event of `module` rewritten as a command buffer would record it:
    hlo_op "command_buffer_1", one correlation id per execution, and cuda_graph_id/_node_id stats
    (the node is the event's position in its execution). Everything else is left as it was."""
    def rewrite_plane(plane: bytes) -> bytes:
        fields = list(_fields(plane))
        if not any(n == 2 and v.startswith(b"/device:GPU") for n, _, v in fields):
            return plane
        names = {}
        for n, _, entry in fields:
            if n == 5:
                md = {a: b for a, _, b in _fields(next(v for k, _, v in _fields(entry) if k == 2))}
                names[md.get(2, b"").decode()] = md.get(1, 0)
        top = max(names.values())
        graph_id, node_id, cb_name = top + 1, top + 2, top + 3
        hlo_op, hlo_module, corr = names["hlo_op"], names["hlo_module"], names["correlation_id"]
        module_ref = names[module]
        events = []  # (offset, line index, event index) of the module's events
        lines = [list(_fields(v)) for n, _, v in fields if n == 3]
        for li, line in enumerate(lines):
            for ei, (n, _, ev) in enumerate(line):
                if n == 4 and any(a == 4 and dict((x, y) for x, _, y in _fields(b)).get(7) == module_ref
                                  for a, _, b in _fields(ev)):
                    events.append((dict((a, b) for a, _, b in _fields(ev) if a == 2).get(2, 0), li, ei))
        events.sort()
        per = len(events) // executions
        assert per * executions == len(events)
        where = {(li, ei): (k // per, k % per) for k, (_, li, ei) in enumerate(events)}

        def rewrite_event(ev: bytes, execution: int, node: int) -> bytes:
            out = b""
            for a, w, b in _fields(ev):
                if a == 4:
                    st = list(_fields(b))
                    mid = next(y for x, _, y in st if x == 1)
                    if mid == hlo_op:
                        b = _enc(1, 0, hlo_op) + _enc(7, 0, cb_name)
                    elif mid == corr:
                        b = _enc(1, 0, corr) + _enc(3, 0, 1 + execution)
                out += _enc(a, w, b)
            return (out + _enc(4, 2, _enc(1, 0, graph_id) + _enc(3, 0, 7))
                    + _enc(4, 2, _enc(1, 0, node_id) + _enc(3, 0, 1000 + node)))

        out, li = b"", 0
        for n, w, v in fields:
            if n == 3:
                line = b""
                for ei, (a, lw, lv) in enumerate(lines[li]):
                    if (li, ei) in where:
                        lv = rewrite_event(lv, *where[(li, ei)])
                    line += _enc(a, lw, lv)
                v, li = line, li + 1
            out += _enc(n, w, v)
        for mid, name in ((graph_id, b"cuda_graph_id"), (node_id, b"cuda_graph_node_id"), (cb_name, b"command_buffer_1")):
            out += _enc(5, 2, _enc(1, 0, mid) + _enc(2, 2, _enc(1, 0, mid) + _enc(2, 2, name)))
        return out

    return b"".join(_enc(n, w, rewrite_plane(v) if n == 1 else v) for n, w, v in _fields(data))


def test_graph_kernels_get_the_instruction_xla_labelled(tmp_path: Path) -> None:
    """The capture made with command buffers off names each kernel's HLO instruction (XLA's own
    hlo_op). Rewritten as a command buffer records it (every kernel hlo_op command_buffer_1, with
    graph node ids), jaxprof recovers every instruction: the ops table equals XLA's labels, op by
    op, count and time."""
    src = GPU / "h200_transformer_nocb.xplane.pb.gz"
    raw = raw_device_events(src)
    truth: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for name, _, dur, st in raw:
        if st.get("hlo_module") == "jit_train_step" and not name.startswith("Memcpy"):
            truth[st["hlo_op"]][0] += 1
            truth[st["hlo_op"]][1] += dur / 1e6
    rewritten = tmp_path / "cb.xplane.pb"
    rewritten.write_bytes(as_command_buffer(gzip.decompress(src.read_bytes()), "jit_train_step", 4))
    labels = {e[3].get("hlo_op") for e in raw_device_events(rewritten) if e[3].get("hlo_module")}
    assert labels == {"command_buffer_1"}
    ops = {o["name"]: o for o in jaxprof_json("ops", rewritten)["ops"] if o["module"] == "jit_train_step"}
    assert set(ops) == set(truth)
    for name, (count, ms) in truth.items():
        assert ops[name]["count"] == count, name
        assert ops[name]["self_ms"] == pytest.approx(ms, abs=1e-6), name



def test_autotuning_is_apart_from_the_program() -> None:
    """The eval step compiles inside step 1: XLA's autotuner runs candidate GEMM kernels (modules
    named after the fusion, no program_id, no HloProto) and its redzone and comparison kernels.
    jaxprof marks exactly the ops whose kernels carry no program_id and ran while the host compiled
    (raw events), keeps them out of the top ops and the precision split, and does not call their
    modules an HloProto missing from the capture."""
    path = GPU / "h200_compile.xplane.pb.gz"
    pd = ProfileData.from_serialized_xspace(gzip.decompress(path.read_bytes()))
    compiles = [(e.start_ns, e.start_ns + e.duration_ns) for p in pd.planes if p.name == "/host:CPU"
                for line in p.lines for e in line.events if e.name == "PJRT_Client_Compile"]
    assert compiles
    raw = [e for e in raw_device_events(path) if not e[0].startswith("Memcpy")]
    assert all("program_id" in e[3] for e in raw if e[3].get("hlo_module", "").startswith("jit_"))
    tuning = [e for e in raw if "program_id" not in e[3] and any(a <= e[1] < b for a, b in compiles)]
    assert len(tuning) > 1000
    ops = jaxprof_json("ops", path)["ops"]
    marked = [o for o in ops if o["autotuning"]]
    assert sum(o["count"] for o in marked) == len(tuning)
    assert sum(o["self_ms"] for o in marked) == pytest.approx(sum(e[2] for e in tuning) / 1e6, rel=1e-6)
    kernels = jaxprof_json("kernels", path)["kernels"]
    assert sum(k["count"] for k in kernels if k["autotuning"]) == sum(1 for e in tuning if not e[0].startswith("Memset"))
    assert not [h for h in jaxprof_json("report", path)["capture_health"] if h["kind"] == "no HLO"]
    text = run_jaxprof("report", str(path)).stdout
    top = text.split("Top ops by self time\n")[1].split("\n\n")[0]
    assert "Redzone" not in top and "kernel, no XLA op" not in top
    assert f"Autotuning ({len(marked)} ops," in text


def test_graph_runs_count_with_the_labelled_run() -> None:
    """In the compile capture the train step ran once with every kernel labelled by XLA, then twice
    as a CUDA graph (284 kernels labelled command_buffer_1, two launches). XProf counts only the
    labelled run; the same executable ran the same kernels each time, so every op ran three times."""
    path = GPU / "h200_compile.xplane.pb.gz"
    raw = [e for e in raw_device_events(path) if e[3].get("hlo_module") == "jit_train_step"]
    graph = [e for e in raw if e[3]["hlo_op"] == "command_buffer_1"]
    runs = len({e[3]["correlation_id"] for e in graph})
    labelled = collections.Counter(e[3]["hlo_op"] for e in raw if e[3]["hlo_op"] != "command_buffer_1")
    assert runs == 2 and len(graph) == runs * sum(labelled.values())
    ops = {o["name"]: o["count"] for o in jaxprof_json("ops", path)["ops"] if o["module"] == "jit_train_step"}
    assert ops == {op: n * (1 + runs) for op, n in labelled.items()}


def test_dispatch_steps_inside_a_users_annotation() -> None:
    """Without step markers, steps are the host's outermost dispatches of the dominant function,
    also when the user's own annotation (here jaxprof.trace's name) wraps the loop."""
    path = GPU / "h200_api_trace.xplane.pb.gz"
    pd = ProfileData.from_serialized_xspace(gzip.decompress(path.read_bytes()))
    host = [(e.start_ns, e.start_ns + e.duration_ns) for p in pd.planes if p.name == "/host:CPU"
            for line in p.lines for e in line.events if e.name == "PjitFunction(step)"]
    outer = [d for d in host if not any(o != d and o[0] <= d[0] and d[1] <= o[1] for o in host)]
    assert len(host) == 6 and len(outer) == 3  # each call shows its dispatch twice, nested
    doc = jaxprof_json("steps", path)
    summary = doc["step_summary"]
    assert summary["count"] == len(outer) and summary["method"] == "host dispatches of PjitFunction(step)"
    # Each step holds the kernels its dispatch launched (the launch call, by correlation id, made
    # inside it), though the host ran ahead and the device ran some after the next dispatch began.
    calls = {dict(e.stats)["correlation_id"]: e.start_ns for p in pd.planes if p.name == "/host:CPU"
             for line in p.lines for e in line.events if "correlation_id" in dict(e.stats)}
    kernels = [(e.start_ns, dict(e.stats)["correlation_id"]) for p in pd.planes if p.name.startswith("/device:GPU")
               for line in p.lines for e in line.events if "correlation_id" in dict(e.stats)]
    launched = [sum(1 for _, c in kernels if a <= calls[c] <= b) for a, b in sorted(outer)]
    assert launched == [142, 142, 142]  # the program's one graph launch per call
    assert any(start > a for a, _ in sorted(outer)[1:] for start, c in kernels if calls[c] < a)  # ran late
    assert [s["ops"] for s in doc["steps"]] == launched


def test_graphs_of_a_loop_body_are_named_by_the_body() -> None:
    """With the layers scanned, each iteration of the while loops launches the body's own CUDA graph
    (command_buffer_21 forward, command_buffer_144 backward): their kernels run the body
    computation's schedule, not the entry's. Every kernel is named, and the op table matches the
    one XLA labelled itself in the same program compiled without command buffers: the same kernel
    ops run as often, except where the autotuner chose another GEMM (a Triton fusion for a cuBLAS
    call) and cuBLAS's memsets (counted with their call), which only the run without graphs records.
    (The loop's dynamic slices run as memcpy nodes in the graph, as copies without it: compared apart.)"""
    cb = {(o["module"], o["name"]): o for o in jaxprof_json("ops", GPU / "h200_scan_cb.xplane.pb.gz")["ops"]}
    raw = raw_device_events(GPU / "h200_scan_nocb.xplane.pb.gz")
    labelled = collections.Counter((e[3]["hlo_module"], e[3]["hlo_op"]) for e in raw
                                   if "hlo_op" in e[3] and not e[0].startswith("Memcpy"))
    assert not [k for k in cb if k[1].startswith("command_buffer")]
    shared = set(cb) & set(labelled)
    assert len(shared) >= len(labelled) - 3
    differ = [k for k in shared if cb[k]["count"] != labelled[k]]
    assert all(cb[k]["category"] == "custom-call" for k in differ) and len(differ) <= 2
    copies = [o for o in cb.values() if o["name"].startswith("fusion-start")]
    graph_copies = [e for e in raw_device_events(GPU / "h200_scan_cb.xplane.pb.gz") if e[0].startswith("memcpy")]
    assert sum(o["count"] for o in copies) + sum(cb[k]["count"] for k in cb if k[1].startswith("copy.")) == len(graph_copies)


def test_a_graph_launch_is_one_launch() -> None:
    """With command buffers each step's 485 kernels and memsets come from one cuGraphLaunch call:
    one launch, its API time once, and no kernel "shorter than its launch call" (the graph's work
    is measured against the call), so no launch_bound finding."""
    path = GPU / "h200_transformer_cb.xplane.pb.gz"
    pd = ProfileData.from_serialized_xspace(gzip.decompress(path.read_bytes()))
    calls = {dict(e.stats)["correlation_id"] for p in pd.planes if p.name == "/host:CPU"
             for line in p.lines for e in line.events if "correlation_id" in dict(e.stats)}
    device = [e for e in raw_device_events(path) if e[3].get("correlation_id") in calls]
    dev = jaxprof_json("launch", path)["devices"][0]
    assert dev["launched"] == len({e[3]["correlation_id"] for e in device}) == 12
    assert dev["short_kernels"] == 0 and dev["queue_max"] == 1
    assert "launch_bound" not in {f["id"] for f in jaxprof_json("findings", path)["findings"]}


def test_launches_made_while_compiling_are_left_out() -> None:
    """The launch analysis matches each device event to the host API call with its correlation_id;
    the calls made while the host compiles are the autotuner's, and are left out: what remains is
    every device event whose call (raw host events) started outside the compile spans."""
    path = GPU / "h200_compile.xplane.pb.gz"
    pd = ProfileData.from_serialized_xspace(gzip.decompress(path.read_bytes()))
    host = [e for p in pd.planes if p.name == "/host:CPU" for line in p.lines for e in line.events]
    compiles = [(e.start_ns, e.start_ns + e.duration_ns) for e in host if e.name == "PJRT_Client_Compile"]
    calls = {dict(e.stats)["correlation_id"]: e.start_ns for e in host if "correlation_id" in dict(e.stats)}
    device = [e for e in raw_device_events(path) if e[3].get("correlation_id") in calls]
    kept = [e for e in device if not any(a <= calls[e[3]["correlation_id"]] < b for a, b in compiles)]
    assert 0 < len(kept) < len(device) // 2
    launches = jaxprof_json("launch", path)["launches"]
    assert sum(x["count"] for x in launches) == len(kept)
    # a call counts once, however many events it queued (a CUDA graph's kernels)
    assert sum(x["matched"] for x in launches) == len({e[3]["correlation_id"] for e in kept})
    # and the device idle while the host compiled is no wait for a slow launch
    spans = sorted(compiles)
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    compiling_ms = sum(b - a for a, b in merged) / 1e6
    dev = jaxprof_json("launch", path)["devices"][0]
    assert dev["idle_other_ms"] >= 0.9 * compiling_ms and dev["idle_host_ms"] < 0.1 * compiling_ms
    assert "launch_bound" not in {f["id"] for f in jaxprof_json("findings", path)["findings"]}


def test_in_place_update_fusions_move_what_xprof_says() -> None:
    """A fusion that updates a buffer in place (dynamic-update-slice into a scan's stacked array)
    reads and writes the update, not the buffer: XLA's cost analysis, which XProf reports. Each such
    fusion of the program's computations runs at XProf's bandwidth, below the H200's peak. (The
    ones XLA wraps in an asynchronous start and runs as a memcpy are left out: XProf's GPU analysis
    counts those by operand utilization, which jaxprof does not model; docs/design.md.)"""
    import hlo_truth
    import xprof_oracle

    path = GPU / "h200_scan_nocb.xplane.pb.gz"
    (program,) = [p for p in hlo_truth.programs(path) if p.module == "jit_train_step"]
    x = {o["name"]: o for o in xprof_oracle.xprof_numbers(path)["hlo_ops"] if "dynamic_update_slice_fusion" in o["name"]}
    mine = {o["name"]: o for o in jaxprof_json("ops", path)["ops"] if o["name"] in x and o["name"] in program.instrs}
    assert len(mine) >= 20
    for name, o in mine.items():
        assert o["gbytes_per_s"] == pytest.approx(x[name]["hbm_gib_per_s"] * 2**30 / 1e9, rel=0.01), name
        assert o["gbytes_per_s"] < 4814  # below the H200's peak, as a real copy must be
