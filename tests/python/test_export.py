"""Trace export (`jaxprof export`, `jaxprof.export_trace`) on real CPU captures and synthetic GPU/TPU
profiles, checked with independent readers: Python's json, trace_check's nesting checker and
protobuf decoder, and jax.profiler.ProfileData for the events themselves."""
from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import jaxprof
from conftest import capture_steps, only_xplane, run_jaxprof, scoped_step
from decoder_oracle import xplane_lines
from trace_check import check_chrome_nesting, check_perfetto, decode_perfetto, load_chrome_trace
from xplane_gen import US, Uint, XSpace, big_xplane

STEPS = [1, 2, 3]


step_fn = scoped_step


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    """Steps 1-3 of five, each inside a user annotation, captured by the Profiler."""
    log_dir = capture_steps(tmp_path_factory.mktemp("export"), start_step=STEPS[0], num_steps=len(STEPS),
                            annotation="host_work")
    return only_xplane(log_dir)


def export(path: Path, out: Path, *args: str) -> dict[str, int]:
    """Runs `jaxprof export` and returns the counts it printed (asserting exit 0)."""
    proc = run_jaxprof("export", path, "-o", out, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    assert out.exists() and not list(out.parent.glob("*.tmp"))  # no temporary file left (.NAME.<hex>.tmp)
    return json.loads(gzip.open(out).read())["otherData"] if str(out).endswith(".json.gz") else {}


def events_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e["ph"] in ("X", "i")]


def thread_names(doc: dict[str, Any]) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name"}


def process_names(doc: dict[str, Any]) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}


def source_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Events copied from the xplane: everything but the derived rows."""
    derived = {"Steps", "XLA Modules", "XLA Ops"}
    threads = thread_names(doc)
    return [e for e in events_of(doc) if threads[(e["pid"], e["tid"])].split(" (overlap")[0] not in derived
            or process_names(doc)[e["pid"]].startswith("/device:TPU")]


# ---- real CPU capture ------------------------------------------------------------------------------

def reference_events(path: Path) -> list[tuple[str, str, str, float, float, dict]]:
    """(plane, line, name, start ns, duration ns, stats) of every event, from JAX's own reader."""
    out = []
    for plane in jax.profiler.ProfileData.from_file(str(path)).planes:
        for line in plane.lines:
            for ev in line.events:
                out.append((plane.name, line.name, ev.name, ev.start_ns, ev.duration_ns, dict(ev.stats)))
    return out


def test_chrome_export_has_every_event_with_its_name_time_and_stats(capture, tmp_path):
    out = tmp_path / "trace.json.gz"
    counts = export(capture, out)
    doc = load_chrome_trace(out)
    ref = reference_events(capture)
    assert counts["events_in"] == counts["events_out"] == len(ref) > 50
    assert counts["events_cut"] == 0
    check_chrome_nesting(doc["traceEvents"])

    # Group both sides by (process, thread, name); overlap threads belong to their line.
    threads, procs = thread_names(doc), process_names(doc)
    ours: dict[tuple, list[dict]] = defaultdict(list)
    for e in source_events(doc):
        ours[(procs[e["pid"]], threads[(e["pid"], e["tid"])].split(" (overlap")[0], e["name"])].append(e)
    theirs: dict[tuple, list[tuple]] = defaultdict(list)
    for plane, line, name, start, dur, stats in ref:
        theirs[(plane, line, name)].append((start, dur, stats))
    assert {k: len(v) for k, v in ours.items()} == {k: len(v) for k, v in theirs.items()}
    # Every event keeps its start (the profile's own time, as the report's), duration, kind, stats.
    for key, events in theirs.items():
        mine = sorted(ours[key], key=lambda e: (e["ts"], -e.get("dur", 0)))
        for (start, dur, stats), e in zip(sorted(events, key=lambda t: (t[0], -t[1])), mine):
            assert abs(e["ts"] * 1000 - start) <= 1, key
            assert e["ph"] == ("i" if dur == 0 else "X"), key
            assert dur == 0 or abs(e["dur"] * 1000 - dur) <= 1, key
            args = e.get("args", {})
            for k, v in stats.items():
                assert args[k] == v or str(args[k]) == str(v), (key, k, args[k], v)


def test_cpu_export_has_steps_row_and_async_flows(capture, tmp_path):
    out = tmp_path / "t.json.gz"
    export(capture, out)
    doc = load_chrome_trace(out)
    threads, procs = thread_names(doc), process_names(doc)
    steps = [e for e in events_of(doc) if threads[(e["pid"], e["tid"])] == "Steps"]
    assert [e["name"] for e in steps] == [f"step {n}" for n in STEPS]
    assert procs[steps[0]["pid"]] == "/host:CPU"
    report = json.loads(run_jaxprof("steps", capture, "--json").stdout)
    assert [(round(e["ts"]), round(e["dur"])) for e in steps] == [
        (round(s["start_ms"] * 1e3), round(s["duration_ms"] * 1e3)) for s in report["steps"]]
    # Asynchronous XLA:CPU ops are linked to their "end:" events: every flow starts and ends once.
    flows = [e for e in doc["traceEvents"] if e["ph"] in ("s", "f")]
    assert flows, "the XLA:CPU capture has no async ops to link"
    by_id = defaultdict(list)
    for f in flows:
        by_id[f["id"]].append(f["ph"])
    assert by_id and all(max(ids) < 2**53 for ids in [list(by_id)])
    assert doc["otherData"]["flows"] == sum("s" in v for v in by_id.values())
    assert any(sorted(v) == ["f", "s"] for v in by_id.values())


def test_perfetto_export_decodes_and_balances(capture, tmp_path):
    chrome, pf = tmp_path / "t.json.gz", tmp_path / "t.pftrace"
    export(capture, chrome)
    export(capture, pf, "--format", "perfetto")
    packets = decode_perfetto(pf)
    counts = check_perfetto(packets)
    doc = load_chrome_trace(chrome)
    assert counts["slices"] == sum(e["ph"] == "X" for e in doc["traceEvents"])
    assert counts["instants"] == sum(e["ph"] == "i" for e in doc["traceEvents"])
    names = Counter(p["track_event"]["name"] for p in packets
                    if "track_event" in p and p["track_event"]["type"] in (1, 3))
    assert names == Counter(e["name"] for e in events_of(doc))
    # Arguments survive with their types.
    args = [p["track_event"]["args"] for p in packets if "track_event" in p and p["track_event"]["args"]]
    assert any(isinstance(a.get("hlo_op"), str) for a in args)
    assert any(isinstance(a.get("step_num"), int) for a in args)


def test_profiler_perfetto_true_writes_the_export(tmp_path):
    w = jnp.ones((32, 32))
    with jaxprof.Profiler(tmp_path, start_step=0, num_steps=1, perfetto=True, report=False) as prof:
        with prof.step(0):
            w = step_fn(w, jnp.ones((8, 32)))
        w.block_until_ready()
    prof.wait_for_reports()
    run = prof.captures[0].run_dir
    doc = load_chrome_trace(run / "perfetto_trace.json.gz")
    assert doc["otherData"]["events_in"] == doc["otherData"]["events_out"] > 0


def test_trace_perfetto_true_writes_the_export(tmp_path):
    with jaxprof.trace(tmp_path, perfetto=True) as t:
        step_fn(jnp.ones((32, 32)), jnp.ones((8, 32))).block_until_ready()
    doc = load_chrome_trace(t.run_dir / "perfetto_trace.json.gz")
    assert any(e["name"].startswith("PjitFunction") for e in events_of(doc))


def test_export_trace_python_api(capture, tmp_path):
    result = jaxprof.export_trace(capture.parent, tmp_path / "x.pftrace", format="perfetto")
    assert result.events_out == result.events_in > 0 and result.bytes == (tmp_path / "x.pftrace").stat().st_size
    default = jaxprof.export_trace(capture)
    assert default.path == capture.parent / "perfetto_trace.json.gz" and default.path.exists()
    with pytest.raises(FileNotFoundError):
        jaxprof.export_trace(tmp_path / "missing")
    with pytest.raises(ValueError):
        jaxprof.export_trace(capture, tmp_path / "y.json", format="svg")


def test_window_steps_and_min_duration_cut_on_purpose(capture, tmp_path):
    export(capture, tmp_path / "a.json.gz")
    full = load_chrome_trace(tmp_path / "a.json.gz")
    span_us = max(e["ts"] + e.get("dur", 0) for e in events_of(full))
    half = export(capture, tmp_path / "b.json.gz", "--window", f"0:{span_us / 2e3}")
    assert half["events_in"] == half["events_out"] + half["events_cut"]
    assert 0 < half["events_out"] < half["events_in"]
    doc = load_chrome_trace(tmp_path / "b.json.gz")
    assert all(e["ts"] < span_us / 2 for e in source_events(doc))
    assert_whole_flows(doc, half["flows"])

    one = export(capture, tmp_path / "c.json.gz", "--steps", "2:2")
    doc = load_chrome_trace(tmp_path / "c.json.gz")
    steps = [e["name"] for e in events_of(doc) if thread_names(doc)[(e["pid"], e["tid"])] == "Steps"]
    assert steps == ["step 2"] and one["events_cut"] > 0

    longer = export(capture, tmp_path / "d.json.gz", "--min-duration", "50us")
    doc = load_chrome_trace(tmp_path / "d.json.gz")
    assert all(e["dur"] >= 50 for e in source_events(doc) if e["ph"] == "X")
    assert longer["events_out"] + longer["events_cut"] == longer["events_in"]

    bad = run_jaxprof("export", capture, "--steps", "90:99", "-o", tmp_path / "e.json.gz")
    assert bad.returncode == 2 and "no step numbered 90..99" in bad.stderr
    assert not (tmp_path / "e.json.gz").exists() and not list(tmp_path.glob("*.tmp"))
    assert run_jaxprof("export", capture, "--window", "5:1").returncode == 2


def assert_whole_flows(doc: dict[str, Any], count: int) -> None:
    """Every flow written has its start and its end, and the count printed is theirs."""
    ends = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f"):
            ends[e["id"]].append(e["ph"])
    assert all(sorted(v) == ["f", "s"] for v in ends.values()), {k: v for k, v in ends.items() if sorted(v) != ["f", "s"]}
    assert len(ends) == count


def test_window_writes_only_whole_flows(tmp_path):
    """A window that keeps a launch but not its kernel (or the reverse) writes no half arrow."""
    src = gpu_profile(tmp_path / "g.xplane.pb")  # 10 us launches at 100, 150, 200 us; kernels at 300, 350, 400 us
    full = load_chrome_trace_of(src, tmp_path / "all.json.gz")
    assert_whole_flows(full, 3)
    for window, pairs in (("0:0.32", 1), ("0:0.2", 0), ("0.155:1", 2), ("0.16:1", 1), ("0.3:1", 0)):
        out = tmp_path / f"w{window.replace(':', '_')}.json.gz"
        counts = export(src, out, "--window", window)
        assert counts["flows"] == pairs, window
        assert_whole_flows(load_chrome_trace(out), pairs)


def load_chrome_trace_of(src: Path, out: Path) -> dict[str, Any]:
    export(src, out)
    return load_chrome_trace(out)


def test_export_errors_are_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\x0a\xff\xff\x01")
    proc = run_jaxprof("export", bad, "-o", tmp_path / "o.json.gz")
    assert proc.returncode == 2 and "bad.xplane.pb" in proc.stderr and "byte" in proc.stderr
    assert list(tmp_path.iterdir()) == [bad]  # no output, no leftover .tmp
    proc = run_jaxprof("export", tmp_path / "nothing")
    assert proc.returncode == 2 and "nothing" in proc.stderr
    good = tmp_path / "g.xplane.pb"
    space = XSpace()
    space.plane("/host:CPU").line("t", id=1).span("x", 0, 1)
    space.write(good)
    proc = run_jaxprof("export", good, "-o", tmp_path / "no_such_dir" / "o.json")
    assert proc.returncode == 2
    assert proc.stderr == f"jaxprof: {tmp_path / 'no_such_dir' / 'o.json'}: cannot write: the directory " \
                          f"{tmp_path / 'no_such_dir'} does not exist\n"
    proc = run_jaxprof("export", good, "-o", tmp_path / "small.json")
    size = (tmp_path / "small.json").stat().st_size
    assert proc.returncode == 0 and 100 < size < 1000  # a few hundred bytes, printed as such (not "0.0 MB")
    assert proc.stderr.endswith(f", {size} B\n")


# ---- synthetic GPU and TPU profiles -----------------------------------------------------------------

def gpu_profile(path: Path) -> Path:
    """Host launches linked to kernels by correlation id, consecutive kernels of one op, a partial
    overlap on one stream, an instant and an aggregated event."""
    space = XSpace(hostnames=["gpu-host"])
    host = space.plane("/host:CPU")
    py = host.line("python3", id=7)
    py.span("train", 0, 1000, {"_r": 1, "step_num": 5})
    cupti = host.line("cuda api", id=8)
    for i, t in enumerate((100, 150, 200)):
        cupti.span("cuLaunchKernel", t, t + 10, {"correlation_id": Uint(100 + i)})
    gpu = space.plane("/device:GPU:0")
    s = gpu.line("Stream #7(Compute)", id=7)
    common = {"hlo_module": "jit_step"}
    s.span("gemm_a", 300, 350, {**common, "hlo_op": "dot.1", "correlation_id": Uint(100)})
    s.span("gemm_b", 350, 380, {**common, "hlo_op": "dot.1", "correlation_id": Uint(101)})
    s.span("add", 400, 450, {**common, "hlo_op": "fusion.2", "correlation_id": Uint(102)})
    s.span("overlapping", 420, 480, {})        # partial overlap with "add": must move, not vanish
    s.instant("marker", 430)
    s.aggregated("aggregated", 3, 30 * US)
    space.write(path)
    return path


def test_gpu_export_derives_rows_links_launches_and_keeps_overlaps(tmp_path):
    src = gpu_profile(tmp_path / "gpu-host.xplane.pb")
    counts = export(src, tmp_path / "g.json.gz")
    doc = load_chrome_trace(tmp_path / "g.json.gz")
    check_chrome_nesting(doc["traceEvents"])
    assert counts["events_in"] == counts["events_out"] == 10
    threads, procs = thread_names(doc), process_names(doc)
    rows: dict[str, list[dict]] = defaultdict(list)
    for e in events_of(doc):
        rows[f'{procs[e["pid"]]}|{threads[(e["pid"], e["tid"])]}'].append(e)
    gpu = "/device:GPU:0"
    assert [(e["name"], e["ts"], e["dur"], e["args"]["kernels"]) for e in rows[f"{gpu}|XLA Ops"]] == [
        ("dot.1", 300.0, 80.0, 2), ("fusion.2", 400.0, 50.0, 1)]
    assert [(e["name"], e["ts"], e["dur"]) for e in rows[f"{gpu}|XLA Modules"]] == [("jit_step", 300.0, 150.0)]
    assert [e["name"] for e in rows[f"{gpu}|Steps"]] == ["step 5"]
    assert counts["derived"] == 4
    # The partial overlap went to its own thread; the instant and the aggregated event are kept.
    assert [e["name"] for e in rows[f"{gpu}|Stream #7(Compute) (overlap 1)"]] == ["overlapping"]
    assert counts["overlap_tracks"] == 1
    stream = {e["name"]: e for e in rows[f"{gpu}|Stream #7(Compute)"]}
    assert stream["marker"]["ph"] == "i" and stream["aggregated"]["args"]["num_occurrences"] == 3
    # Devices come before the host in the sort order.
    sort = {e["pid"]: e["args"]["sort_index"] for e in doc["traceEvents"] if e["name"] == "process_sort_index"}
    pid_of = {v: k for k, v in procs.items()}
    assert sort[pid_of[gpu]] < sort[pid_of["/host:CPU"]]
    # Each launch has a flow arrow to its kernel: "s" on the host thread, "f" on the stream.
    flows = defaultdict(dict)
    for f in doc["traceEvents"]:
        if f["ph"] in ("s", "f"):
            flows[f["id"]][f["ph"]] = (threads[(f["pid"], f["tid"])], f["ts"])
    assert sorted(flows.values(), key=lambda v: v["s"][1]) == [
        {"s": ("cuda api", 100.0), "f": ("Stream #7(Compute)", 300.0)},
        {"s": ("cuda api", 150.0), "f": ("Stream #7(Compute)", 350.0)},
        {"s": ("cuda api", 200.0), "f": ("Stream #7(Compute)", 400.0)},
    ]

    export(src, tmp_path / "g.pftrace", "--format", "perfetto")
    packets = decode_perfetto(tmp_path / "g.pftrace")
    pcounts = check_perfetto(packets)
    assert pcounts["slices"] + pcounts["instants"] == 10 + 4
    assert pcounts["flows"] == 3


def test_tpu_profile_keeps_its_own_rows(tmp_path):
    space = XSpace(hostnames=["tpu-host"])
    tpu = space.plane("/device:TPU:0")
    steps = tpu.line("Steps", id=1)
    steps.span("0", 0, 100)
    ops = tpu.line("XLA Ops", id=2)
    ops.span("fusion.1", 10, 40, {"hlo_op": "fusion.1"})
    ops.span("fusion.2", 40, 90, {"hlo_op": "fusion.2"})
    src = space.write(tmp_path / "tpu-host.xplane.pb")
    counts = export(src, tmp_path / "t.json.gz")
    doc = load_chrome_trace(tmp_path / "t.json.gz")
    assert counts["derived"] == 0 and counts["events_out"] == 3
    assert sorted(thread_names(doc).values()) == ["Steps", "XLA Ops"]


def test_multi_host_run_exports_one_process_per_host_plane(tmp_path):
    for host in ("host-a", "host-b"):
        gpu_profile(tmp_path / f"{host}.xplane.pb")
    counts = export(tmp_path, tmp_path / "m.json.gz")
    doc = load_chrome_trace(tmp_path / "m.json.gz")
    assert counts["events_out"] == 20
    assert sorted(process_names(doc).values()) == [
        "host-a: /device:GPU:0", "host-a: /host:CPU", "host-b: /device:GPU:0", "host-b: /host:CPU"]
    # Correlation ids repeat across hosts; flows never cross hosts.
    assert counts["flows"] == 6
    only_b = export(tmp_path, tmp_path / "b.json.gz", "--host", "host-b")
    assert only_b["events_in"] == only_b["events_out"] == 10


# ---- beyond JAX's 5M-event cap ------------------------------------------------------------------------

def test_more_than_five_million_events_export_completely(tmp_path):
    n = 5_200_000
    src = tmp_path / "big.xplane.pb"
    big_xplane(src, n, 4)
    decoded = sum(c for *_, c, _ in xplane_lines(src))
    assert decoded == n
    out = tmp_path / "big.json.gz"
    proc = run_jaxprof("export", src, "-o", out, timeout=600)
    assert proc.returncode == 0, proc.stderr
    slices, last = 0, None
    with gzip.open(out, "rt") as f:
        for line in f:
            if line.startswith('{"ph":"X"'):
                slices += 1
                last = line
            elif line.startswith('],"otherData"'):
                other = json.loads("{" + line[2:])["otherData"]
    assert slices == n
    assert other["events_in"] == other["events_out"] == n and other["events_cut"] == 0
    last_event = json.loads(last.rstrip().rstrip(","))
    assert last_event["name"] == "tick" and last_event["dur"] == 1.0
    assert last_event["ts"] == (n // 4 - 1) * 2.0


def test_perfetto_export_parses_with_perfettos_own_protos(capture, tmp_path):
    """A second, official oracle: the Trace message generated from Perfetto's .proto files."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    out = tmp_path / "t.pftrace"
    export(capture, out, "--format", "perfetto")
    trace = pb.Trace()
    trace.ParseFromString(out.read_bytes())
    mine = decode_perfetto(out)
    assert len(trace.packet) == len(mine)
    te = pb.TrackEvent
    types = Counter(p.track_event.type for p in trace.packet if p.HasField("track_event"))
    assert types[te.TYPE_SLICE_BEGIN] == types[te.TYPE_SLICE_END] > 0
    names = {}
    for p in trace.packet:
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            names.clear()
        names.update({n.iid: n.name for n in p.interned_data.event_names})
        if p.HasField("track_event") and p.track_event.type == te.TYPE_SLICE_BEGIN:
            assert p.track_event.name_iid in names or p.track_event.name
    threads = {p.track_descriptor.uuid: p.track_descriptor.thread.thread_name for p in trace.packet
               if p.HasField("track_descriptor") and p.track_descriptor.HasField("thread")}
    assert "Steps" in threads.values()
    assert all(p.track_event.track_uuid in threads for p in trace.packet if p.HasField("track_event"))


@pytest.mark.parametrize("make_space", ["gpu", "tpu"])
def test_analysis_suite_fixtures_export_completely(make_space, tmp_path):
    """The GPU and TPU XSpaces of test_synthetic.py: counts, nesting, names against ProfileData."""
    from test_synthetic import gpu_space, tpu_space

    src = (gpu_space() if make_space == "gpu" else tpu_space()).write(tmp_path / "host.xplane.pb")
    counts = export(src, tmp_path / "t.json.gz")
    doc = load_chrome_trace(tmp_path / "t.json.gz")
    check_chrome_nesting(doc["traceEvents"])
    ref = reference_events(src)
    assert counts["events_in"] == counts["events_out"] == len(ref)
    assert Counter(e["name"] for e in source_events(doc)) == Counter(name for _, _, name, *_ in ref)
    export(src, tmp_path / "t.pftrace", "--format", "perfetto")
    pcounts = check_perfetto(decode_perfetto(tmp_path / "t.pftrace"))
    assert pcounts["slices"] + pcounts["instants"] == counts["events_out"] + counts["derived"]
    if make_space == "tpu":
        assert counts["derived"] == 0  # XProf's own Steps / XLA Modules / XLA Ops rows are there
    else:  # kernels carry correlation ids but no launch was captured: no dangling arrows
        assert counts["derived"] > 0 and counts["flows"] == 0
