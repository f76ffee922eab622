"""`jaxprof launch`'s per-stream idle split (launch_streams) and the launch queue's depth over time
(launch_queue), against truth from outside jaxprof:

- real GPU captures written by others (ROCm MI300 JAX, TransformerEngine fused attention, TensorFlow
  on 8 V100s: several streams per device): every number recomputed here from the raw events
  (jax.profiler.ProfileData) by this file's own reader, which groups each device event by its line
  (stream) and pairs it with the host call of the same correlation_id;
- the benchmark generator's GPU layout with planted launch timings (gen_xplane.py --plant-launch):
  what it planted on its copy streams, exactly, and a long run whose queue series is downsampled.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import PLANT_GPUS, PLANT_OPS, PLANT_STEPS, REAL_CAPTURES, jaxprof_json, run_jaxprof
from raw_events import raw_correlated

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gen_xplane  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
GPU_CAPTURES = [REAL_CAPTURES / "mi300_jax08_conv.xplane.pb.gz", REAL_CAPTURES / "te_fused_attn_934987a2fc2f.xplane.pb.gz",
                REAL_CAPTURES / "tf_bert_8xv100_worker0.xplane.pb.gz", DATA / "h200_transfers.xplane.pb.gz",
                DATA / "h200_transformer_nocb.xplane.pb.gz"]
K2K_NS = 10_000  # the kernel-to-kernel bound of docs/design.md "Launch and idle causes"
MAX_POINTS = 2048  # JP_QUEUE_POINTS_MAX, which the JSON states as launch_queue.max_points


def raw_work(path: Path):
    """(device events, calls by correlation id) from the raw events: each device event as
    (plane, line name, start_ns, end_ns, correlation id); each call as (start_ns, end_ns)."""
    dev, calls = raw_correlated(path)
    return [(plane, line, s, e, c) for plane, line, _, s, e, c in dev], {c: (s, e) for c, (_, s, e) in calls.items()}


def stream_truth(path: Path):
    """Per (device, stream name): HTA's per-stream rule (_analyze_idle_time_for_stream)
    with the 10 µs kernel-to-kernel bound: each gap on the stream goes to the event that ends it."""
    dev, calls = raw_work(path)
    by_stream = defaultdict(list)
    for plane, name, s, e, c in dev:
        by_stream[(plane, name)].append((s, e, c))
    out = {}
    for key, evs in by_stream.items():
        evs.sort()
        r = dict(events=len(evs), launched=sum(c in calls for *_, c in evs), host=0, k2k=0, other=0, busy=0,
                 first=evs[0][0])
        end = None
        for s, e, c in evs:
            if end is not None and s > end:
                call = calls.get(c)
                if call and call[0] > end:
                    r["host"] += s - end
                elif call and s - end < K2K_NS:
                    r["k2k"] += s - end
                else:
                    r["other"] += s - end
            lo = s if end is None else max(s, end)
            r["busy"] += max(0, e - lo)
            end = e if end is None else max(end, e)
        r["last"] = end
        out[key] = r
    return out


def queue_truth(path: Path):
    """Per device: the launch queue's depth after each instant at which it changed, as
    [(t_ns, depth)]: a launch is outstanding from its call's start to its work's end."""
    dev, calls = raw_work(path)
    deltas = defaultdict(lambda: defaultdict(int))
    for plane, _, s, e, c in dev:
        if c in calls:
            deltas[plane][calls[c][0]] += 1
            deltas[plane][e] -= 1
    out = {}
    for plane, by_t in deltas.items():
        depth, series = 0, []
        for t in sorted(by_t):
            if by_t[t]:
                depth += by_t[t]
                series.append((t, depth))
        out[plane] = series
    return out


def ns(ms: float) -> int:
    return round(ms * 1e6)


@pytest.mark.parametrize("path", GPU_CAPTURES, ids=lambda p: p.name)
def test_stream_split_matches_the_raw_events(path: Path) -> None:
    """Every stream with correlated work is a row; its events, launches, busy time and idle by
    cause are what HTA's per-stream rule gives on the raw events; busy + idle = its window."""
    want = stream_truth(path)
    got = jaxprof_json("launch", path)
    rows = {(r["device"], r["stream"]): r for r in got["launch_streams"]}
    assert len(rows) == len(got["launch_streams"]) and set(rows) == set(want)
    for key, w in want.items():
        r = rows[key]
        assert r["stream"].split("(")[0] == f"Stream #{r['stream_id']}"  # CUPTI and ROCm name a stream by its id
        assert (r["events"], r["launched"]) == (w["events"], w["launched"]), key
        assert (ns(r["first_ms"]), ns(r["last_ms"])) == (w["first"], w["last"]), key
        for col, k in (("busy_ms", "busy"), ("idle_host_ms", "host"), ("idle_kernel_ms", "k2k"),
                       ("idle_other_ms", "other")):
            assert abs(ns(r[col]) - w[k]) <= 1, (key, col, r[col], w[k])
        idle = r["idle_host_ms"] + r["idle_kernel_ms"] + r["idle_other_ms"]
        assert idle + r["busy_ms"] == pytest.approx(r["last_ms"] - r["first_ms"], abs=1e-5), key


def test_tf_bert_has_several_streams_per_device() -> None:
    """TensorFlow's V100 capture: a compute stream and copy streams per device, whose per-stream
    view differs from the device's (a copy stream waits for the host while compute runs)."""
    got = jaxprof_json("launch", GPU_CAPTURES[2])
    per_dev = defaultdict(list)
    for r in got["launch_streams"]:
        per_dev[r["device"]].append(r)
    assert max(len(v) for v in per_dev.values()) >= 3
    dev = {d["name"]: d for d in got["devices"]}
    for name, streams in per_dev.items():
        # the device's launched count is the sum of its streams'; its idle is no stream's sum
        assert sum(s["launched"] for s in streams) == dev[name]["launched"]
        if len(streams) > 1:
            assert sum(s["idle_host_ms"] for s in streams) > dev[name]["idle_host_ms"]


STEPS, GPUS, OPS = PLANT_STEPS, PLANT_GPUS, PLANT_OPS  # the conftest `planted` layout's


def test_planted_copy_streams_wait_for_the_host(planted) -> None:
    """The generator's batch copy (Stream #14) and loss copy (Stream #15) run once a step, each
    called after its stream's previous copy ended: per stream every gap is the host's, (steps - 1)
    x (period - the copy's time), though the device as a whole calls the loss copy's gap kernel
    to kernel."""
    path, info = planted
    plant, period = gen_xplane.PLANT, info["period_ps"]
    rows = {(r["device"], r["stream"]): r for r in jaxprof_json("launch", path)["launch_streams"]}
    for g in range(GPUS):
        dev = f"/device:GPU:{g}"
        h2d, d2h = rows[(dev, "Stream #14(MemcpyH2D)")], rows[(dev, "Stream #15(MemcpyD2H)")]
        # the period is in ps, the events' times in ns: within 1 ns a gap
        assert abs(h2d["idle_host_ms"] * 1e9 - (STEPS - 1) * (period - plant["copy_ps"])) <= (STEPS - 1) * 1000
        assert abs(d2h["idle_host_ms"] * 1e9 - (STEPS - 1) * (period - 3 * gen_xplane.US)) <= (STEPS - 1) * 1000
        for r in (h2d, d2h):
            assert r["idle_kernel_ms"] == 0 and r["idle_other_ms"] == 0 and r["launched"] == r["events"] == STEPS
        compute = rows[(dev, "Stream #13(Compute)")]
        assert compute["launched"] + rows[(dev, "Stream #17(Compute)")]["launched"] == STEPS * OPS


def check_series(s: dict, w: list[tuple[int, int]]) -> None:
    """One device's launch_queue entry against its true changes w: every change as a point while
    they fit the bound; past it, buckets: each point the most outstanding in [t, t + bucket) of the
    true step function, every bucket with a change has its point, within the bound."""
    assert s["changes"] == len(w)
    pts = [(ns(t), d) for t, d in s["points"]]
    assert max(d for _, d in pts) == max(d for _, d in w)
    if len(w) <= MAX_POINTS:
        assert not s["downsampled"] and s["bucket_ms"] == 0 and pts == w
        return
    bucket = ns(s["bucket_ms"])
    assert s["downsampled"] and bucket > 0 and len(pts) <= MAX_POINTS + 4
    t0 = w[0][0]
    assert pts[0][0] == t0
    for t, d in pts:
        assert (t - t0) % bucket == 0
        before = [dd for tt, dd in w if tt <= t]  # the depth holding at t, and every depth the bucket changes to
        inside = [dd for tt, dd in w if t < tt < t + bucket]
        assert d == max([before[-1] if before else 0] + inside), (t, d)
    starts = {t for t, _ in pts}
    assert all(t0 + (t - t0) // bucket * bucket in starts for t, _ in w)


@pytest.mark.parametrize("path", GPU_CAPTURES, ids=lambda p: p.name)
def test_queue_series_matches_the_raw_events(path: Path) -> None:
    """Each device's queue depth over time as the raw events give it: every change on the ROCm,
    TransformerEngine, TF and H200 copy captures; downsampled on the H200 transformer (4,048
    changes). Its most is the device's queue_max."""
    want = queue_truth(path)
    got = jaxprof_json("launch", path)
    q = got["launch_queue"]
    assert q["max_points"] == MAX_POINTS
    series = {s["device"]: s for s in q["devices"]}
    assert set(series) == {p for p, w in want.items() if w}
    dev = {d["name"]: d for d in got["devices"]}
    for plane, w in want.items():
        check_series(series[plane], w)
        assert max(d for _, d in series[plane]["points"]) == dev[plane]["queue_max"]
    if path.name == "h200_transformer_nocb.xplane.pb.gz":
        assert series["/device:GPU:0"]["downsampled"]


def test_queue_series_downsampled_by_max_per_bucket(tmp_path) -> None:
    """A long planted run (each device 26 launches a step, 2 changes each, 60 steps): more changes
    than the bound, so the series is bucketed and says so."""
    path = tmp_path / "long.xplane.pb"
    gen_xplane.generate(path, "gpu", steps=60, gpus=2, ops_per_step=OPS, plant_launch=True)
    want = queue_truth(path)
    got = jaxprof_json("launch", path)["launch_queue"]["devices"]
    assert len(got) == 2
    for s in got:
        assert len(want[s["device"]]) > MAX_POINTS
        check_series(s, want[s["device"]])


def test_table_flag_picks_the_streams(planted) -> None:
    """--table launch_streams: the streams alone, as CSV (every row) or text; an unknown name is
    an error naming the section's other table."""
    path, _ = planted
    doc = jaxprof_json("launch", path)
    csv = run_jaxprof("launch", str(path), "--table", "launch_streams", "--csv").stdout.splitlines()
    assert csv[0].startswith("stream,device,stream_id,events,launched,busy_ms")
    assert len(csv) - 1 == len(doc["launch_streams"])
    bad = run_jaxprof("launch", str(path), "--table", "comm_instances")
    assert bad.returncode == 2 and "--table 'comm_instances': launch's other table is launch_streams" in bad.stderr


def test_python_api_streams_and_queue() -> None:
    """jaxprof.load(...).launch_streams() and launch_queue() are the launch document's."""
    import jaxprof

    path = GPU_CAPTURES[2]
    p, doc = jaxprof.load(str(path)), jaxprof_json("launch", path)
    assert [r.to_dict() for r in p.launch_streams()] == doc["launch_streams"]
    assert p.launch_queue() == doc["launch_queue"]


def test_python_render_takes_the_table(planted) -> None:
    """Profile.render(..., table=) is the command's --table."""
    import jaxprof

    path, _ = planted
    want = run_jaxprof("launch", str(path), "--table", "launch_streams", "--csv").stdout
    assert jaxprof.load(str(path)).render("launch", "csv", table="launch_streams") == want
    with pytest.raises(Exception, match="launch's other table is launch_streams"):
        jaxprof.load(str(path)).render("launch", "csv", table="nope")
