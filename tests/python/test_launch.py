"""`jaxprof launch` and the devices' idle split by cause, against truth from outside jaxprof:

- real GPU captures written by others (ROCm MI300 / MI355 JAX, TensorFlow on 8 V100s): every
  number is recomputed here from the raw events (jax.profiler.ProfileData) by this file's own
  reader, which pairs each device event with the host call of the same correlation_id;
- the benchmark generator's GPU layout with planted launch timings (gen_xplane.py
  --plant-launch): the idle it planted per cause, exactly.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import PLANT_GPUS, PLANT_OPS, PLANT_STEPS, REAL_CAPTURES, jaxprof_json
from raw_events import raw_correlated, raw_planes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gen_xplane  # noqa: E402

GPU_CAPTURES = ["mi300_jax08_gemm.xplane.pb.gz", "mi300_jax08_attention.xplane.pb.gz",
                "te_fused_attn_934987a2fc2f.xplane.pb.gz", "tf_bert_8xv100_worker0.xplane.pb.gz"]
# The project's own H200 captures (tests/data/gpu/README.md): one launch per kernel without command
# buffers, pageable and pinned copies, and a scanned model's loop.
OWN_GPU = Path(__file__).resolve().parents[1] / "data" / "gpu"
OWN_GPU_CAPTURES = ["h200_transformer_nocb.xplane.pb.gz", "h200_transfers.xplane.pb.gz", "h200_scan_nocb.xplane.pb.gz"]
K2K_NS = 10_000  # the kernel-to-kernel bound of docs/design.md "Launch and idle causes"


def raw_launches(path: Path):
    """(device events, calls by correlation id) from the raw events: each device event as
    (plane, name, start_ns, end_ns, correlation id); each call as (name, start_ns, end_ns)."""
    dev, calls = raw_correlated(path)
    return [(plane, name, s, e, c) for plane, _, name, s, e, c in dev], calls


def expected(path: Path):
    """Per (device, name): count, matched, api/queue/delay/kernel sums (ns), short kernels; per
    device: idle by cause (ns), launches matched, most launches outstanding."""
    dev, calls = raw_launches(path)
    rows = defaultdict(lambda: dict(count=0, matched=0, api=0.0, queue=0.0, delay=0.0, kernel=0.0, short=0))
    for plane, name, s, e, c in dev:
        r = rows[(plane, name)]
        r["count"] += 1
        r["kernel"] += e - s
        if c in calls:
            _, cs, ce = calls[c]
            r["matched"] += 1
            r["api"] += ce - cs
            r["queue"] += s - ce
            r["delay"] += s - cs
            is_copy = name.startswith("Memcpy") or name.startswith("Memset")
            r["short"] += (not is_copy) and (e - s) < (ce - cs)
    devices = defaultdict(lambda: dict(host=0.0, k2k=0.0, other=0.0, launched=0, queue_max=0))
    by_dev = defaultdict(list)
    for ev in dev:
        by_dev[ev[0]].append(ev)
    for plane, evs in by_dev.items():
        d = devices[plane]
        evs.sort(key=lambda x: (x[2], x[3]))
        end = evs[0][3]
        for _, _, s, e, c in evs[1:]:
            if s > end:
                call = calls.get(c)
                if call and call[1] > end:
                    d["host"] += s - end
                elif call and s - end < K2K_NS:
                    d["k2k"] += s - end
                else:
                    d["other"] += s - end
            end = max(end, e)
        d["launched"] = sum(1 for ev in evs if ev[4] in calls)
        changes = sorted([(calls[c][1], 1) for *_, c in evs if c in calls] + [(e, -1) for _, _, _, e, c in evs if c in calls],
                         key=lambda x: (x[0], x[1]))
        depth = 0
        for _, delta in changes:
            depth += delta
            d["queue_max"] = max(d["queue_max"], depth)
    return rows, devices


def ms_to_ns(v: float) -> float:
    return v * 1e6


@pytest.mark.parametrize("path", [REAL_CAPTURES / n for n in GPU_CAPTURES] + [OWN_GPU / n for n in OWN_GPU_CAPTURES],
                         ids=GPU_CAPTURES + OWN_GPU_CAPTURES)
def test_launch_stats_match_the_raw_events(path: Path) -> None:
    name = path.name
    rows, devices = expected(path)
    assert rows, f"{name}: its launches carry correlation ids"
    got = jaxprof_json("launch", path)
    seen = {(r["device"], r["name"]): r for r in got["launches"]}
    assert set(seen) == set(rows)
    for key, want in rows.items():
        r = seen[key]
        assert (r["count"], r["matched"], r["short"]) == (want["count"], want["matched"], want["short"]), key
        assert ms_to_ns(r["kernel_total_ms"]) == pytest.approx(want["kernel"], abs=1 + 1e-9 * want["kernel"])
        assert ms_to_ns(r["api_total_ms"]) == pytest.approx(want["api"], abs=1 + 1e-9 * abs(want["api"]))
        assert ms_to_ns(r["delay_total_ms"]) == pytest.approx(want["delay"], abs=1 + 1e-9 * abs(want["delay"]))
        if want["matched"]:
            assert ms_to_ns(r["queue_avg_ms"]) == pytest.approx(want["queue"] / want["matched"], abs=2)
    delays = [r["delay_total_ms"] for r in got["launches"]]
    assert delays == sorted(delays, reverse=True)
    by_name = {d["name"]: d for d in got["devices"]}
    for plane, want in devices.items():
        d = by_name[plane]
        assert ms_to_ns(d["idle_host_ms"]) == pytest.approx(want["host"], abs=1 + 1e-9 * want["host"]), plane
        assert ms_to_ns(d["idle_kernel_ms"]) == pytest.approx(want["k2k"], abs=1 + 1e-9 * want["k2k"]), plane
        assert ms_to_ns(d["idle_other_ms"]) == pytest.approx(want["other"], abs=1 + 1e-9 * want["other"]), plane
        assert (d["launched"], d["queue_max"]) == (want["launched"], want["queue_max"]), plane


def test_real_captures_show_both_causes() -> None:
    """The ROCm gemm capture launches one op at a time from Python: every gap waits for the host.
    The fused-attention capture queues far ahead (up to 21 launches outstanding): of its 0.82 ms
    idle, most is the host's (the first kernels of each run) and the rest kernel-to-kernel gaps."""
    gemm = {d["name"]: d for d in jaxprof_json("launch", REAL_CAPTURES / GPU_CAPTURES[0])["devices"]}
    g0 = gemm["/device:GPU:0"]
    assert g0["idle_host_ms"] > 0 and g0["idle_other_ms"] == 0 and g0["idle_kernel_ms"] == 0
    te = {d["name"]: d for d in jaxprof_json("launch", REAL_CAPTURES / GPU_CAPTURES[2])["devices"]}["/device:GPU:0"]
    assert te["queue_max"] == 21 and te["idle_other_ms"] == 0
    assert te["idle_host_ms"] > te["idle_kernel_ms"] > 0
    # the split covers the device's idle: busy + idle = its first-to-last window
    window = te["last_ms"] - te["first_ms"]
    idle = te["idle_host_ms"] + te["idle_kernel_ms"] + te["idle_other_ms"]
    assert idle == pytest.approx(window - te["busy_ms"], abs=1e-6)


STEPS, GPUS, OPS = PLANT_STEPS, PLANT_GPUS, PLANT_OPS  # the conftest `planted` layout's


def test_planted_idle_split_is_exact(planted) -> None:
    path, info = planted
    plant = gen_xplane.PLANT
    n_host = sum(gen_xplane.plant_kind(i) == "host" for i in range(OPS))
    n_other = sum(gen_xplane.plant_kind(i) == "other" for i in range(OPS))
    n_k2k = OPS - n_host - n_other + 1  # + the loss copy
    got = {d["name"]: d for d in jaxprof_json("launch", path)["devices"]}
    for g in range(GPUS):
        name = f"/device:GPU:{g}"
        want = info["planted"][name]
        # the generator's own ledger, and the same from PLANT's constants
        host_ps = STEPS * n_host * (plant["host_gap_ps"] + plant["api_ps"] + plant["queue_ps"])
        host_ps += (STEPS - 1) * want["between_steps_ps"]
        assert want["idle_ps"]["host"] * STEPS + (STEPS - 1) * want["between_steps_ps"] == host_ps
        d = got[name]
        assert round(d["idle_host_ms"] * 1e9) == host_ps
        assert round(d["idle_kernel_ms"] * 1e9) == STEPS * n_k2k * plant["k2k_ps"]
        assert round(d["idle_other_ms"] * 1e9) == STEPS * n_other * plant["other_ps"]
        assert d["launched"] == STEPS * (OPS + 2)


def test_planted_launch_delays_are_exact(planted) -> None:
    path, _ = planted
    plant = gen_xplane.PLANT
    rows = jaxprof_json("launch", path)["launches"]
    for r in rows:
        assert r["matched"] == r["count"]
        if r["name"] == "MemcpyH2D":
            # called at 20 µs, copied queue_ps after the call: every step alike
            assert round(r["api_avg_ms"] * 1e9) == plant["copy_api_ps"]
            assert round(r["queue_avg_ms"] * 1e9) == plant["queue_ps"]
            assert round(r["delay_avg_ms"] * 1e9) == plant["copy_api_ps"] + plant["queue_ps"]
            assert r["host_wait"] == STEPS - 1
        elif r["kernel"]:
            assert round(r["api_avg_ms"] * 1e9) == plant["api_ps"]
    # the kernels that waited for the host: launched host_gap after the device drained, started
    # queue_ps after their call
    host_rows = [r for r in rows if r["host_wait"] and r["kernel"]]
    assert sum(r["host_wait"] for r in host_rows) == GPUS * STEPS * sum(
        gen_xplane.plant_kind(i) == "host" for i in range(OPS))


def test_step_window_reports_the_whole_captures_launches(planted) -> None:
    """report --steps: the devices' launch columns stay the whole capture's (design.md: steps do
    not narrow launches), however the window narrows the op events that carry the device ends."""
    path, _ = planted
    _, devices = expected(path)
    got = {d["name"]: d for d in jaxprof_json("report", path, "--steps", "2:3")["devices"]}
    assert set(got) == set(devices) and len(devices) == GPUS
    for plane, want in devices.items():
        d = got[plane]
        assert (d["launched"], d["queue_max"]) == (want["launched"], want["queue_max"]), plane
        for key, cause in (("idle_host_ms", "host"), ("idle_kernel_ms", "k2k"), ("idle_other_ms", "other")):
            assert ms_to_ns(d[key]) == pytest.approx(want[cause], abs=500), (plane, key)  # printed to the µs


def test_each_host_matches_its_own_calls(tmp_path) -> None:
    """Correlation ids are per process: two hosts' GPU captures, numbered alike (1, 2, 3, ...) but
    timed differently (two generator seeds), read as one run. Every row equals what that host's own
    raw events give, and every device's idle split what its generator planted: no device event
    took the other host's call of its id."""
    want_rows, planted, ids = [], {}, []
    for host, seed in (("hostA", 3), ("hostB", 11)):
        path = tmp_path / f"{host}.xplane.pb"
        info = gen_xplane.generate(path, "gpu", steps=STEPS, gpus=GPUS, ops_per_step=OPS, plant_launch=True, seed=seed)
        rows, _ = expected(path)
        want_rows.append(sorted((dev, name, r["count"], r["matched"], r["api"], r["delay"]) for (dev, name), r in rows.items()))
        planted.update({(dev, host): p for dev, p in info["planted"].items()})
        ids.append({c for *_, c in raw_launches(path)[0]})
    assert ids[0] & ids[1], "the two hosts share correlation ids"
    assert want_rows[0] != want_rows[1], "the two hosts' launches differ"
    got = jaxprof_json("launch", tmp_path)
    rows = sorted((r["device"], r["name"], r["count"], r["matched"], ms_to_ns(r["api_total_ms"]),
                   ms_to_ns(r["delay_total_ms"])) for r in got["launches"])
    want = sorted(want_rows[0] + want_rows[1])
    assert [r[:4] for r in rows] == [w[:4] for w in want]
    for r, w in zip(rows, want):  # the JSON's ms have ns resolution
        assert r[4:] == pytest.approx(w[4:], abs=1), r
    by_key = {(d["name"], d["host"]): d for d in got["devices"]}
    assert set(by_key) == set(planted)
    for key, p in planted.items():
        d = by_key[key]
        assert round(d["idle_host_ms"] * 1e9) == p["idle_ps"]["host"] * STEPS + (STEPS - 1) * p["between_steps_ps"], key
        assert round(d["idle_other_ms"] * 1e9) == p["idle_ps"]["other"] * STEPS, key
        assert d["launched"] == STEPS * (OPS + 2), key


def test_launch_is_empty_without_correlation(tmp_path) -> None:
    """The default GPU layout and XLA:CPU captures have no launch pairs to report wrongly: the
    CPU layout has no correlation ids at all."""
    path = tmp_path / "cpu.xplane.pb"
    gen_xplane.generate(path, "cpu", steps=2, threads=4, ops_per_step=12)
    got = jaxprof_json("launch", path)
    assert got["launches"] == []
    assert all(d["idle_host_ms"] == 0 and d["launched"] == 0 for d in got["devices"])


def findings_of(path: Path) -> dict[str, dict]:
    return {f["id"]: f for f in jaxprof_json("findings", path)["findings"]}


def test_findings_on_real_captures() -> None:
    """launch_bound where launching a device's work took the host longer than the work ran (the
    ROCm conv capture's GPU 0: 4.82 ms of API calls for 4.00 ms of work, mostly tiny copyBuffer
    kernels); host_wait_idle where the device waits for the host with longer kernels (gemm,
    attention: one op per jitted call from Python); neither where launches queue far ahead."""
    conv = findings_of(REAL_CAPTURES / "mi300_jax08_conv.xplane.pb.gz")
    assert conv["launch_bound"]["severity"] == "bad" and "host_wait_idle" not in conv
    assert conv["launch_bound"]["evidence"].startswith(
        "/device:GPU:0: its 60 launches took the host 4.82 ms of API calls for 4.00 ms of device work; "
        "45 are kernels shorter than their launch call")
    for name in ("mi300_jax08_gemm.xplane.pb.gz", "mi300_jax08_attention.xplane.pb.gz"):
        f = findings_of(REAL_CAPTURES / name)
        assert f["host_wait_idle"]["severity"] == "bad" and "launch_bound" not in f, name
    gemm = findings_of(REAL_CAPTURES / "mi300_jax08_gemm.xplane.pb.gz")["host_wait_idle"]["evidence"]
    assert gemm.startswith("/device:GPU:0 idles 5.98 ms (63% of its 9.46 ms window)")
    te = findings_of(REAL_CAPTURES / "te_fused_attn_934987a2fc2f.xplane.pb.gz")
    assert "launch_bound" not in te and "host_wait_idle" not in te


def test_planted_host_wait_finding(planted) -> None:
    path, info = planted
    dev = {d["name"]: d for d in jaxprof_json("launch", path)["devices"]}["/device:GPU:0"]
    share = dev["idle_host_ms"] / (dev["last_ms"] - dev["first_ms"])
    f = findings_of(path)
    assert "launch_bound" not in f  # every planted kernel lasts at least its 3 µs call: launching is faster
    assert ("host_wait_idle" in f) == (share >= 0.10)
    if share >= 0.10:
        assert f"{100 * share:.0f}% of its" in f["host_wait_idle"]["evidence"]


def test_python_api_launches() -> None:
    """jaxprof.load(...).launches() gives the launch table's rows, devices() the idle split."""
    import jaxprof

    p = jaxprof.load(str(REAL_CAPTURES / "mi300_jax08_gemm.xplane.pb.gz"))
    rows = p.launches()
    doc = jaxprof_json("launch", REAL_CAPTURES / "mi300_jax08_gemm.xplane.pb.gz")
    assert [(r.device, r.name, r.count, r.matched) for r in rows] == [
        (r["device"], r["name"], r["count"], r["matched"]) for r in doc["launches"]]
    (g0,) = [d for d in p.devices() if d.name == "/device:GPU:0"]
    assert g0.idle_host_ms == doc["devices"][0]["idle_host_ms"] and g0.launched == 54


@pytest.mark.parametrize("path,fn", [(REAL_CAPTURES / "mi300_jax08_attention.xplane.pb.gz", "matmul"),
                                     (OWN_GPU / "h200_api_trace.xplane.pb.gz", "step")], ids=["mi300_attention", "h200_api"])
def test_dispatch_steps_hold_the_work_their_dispatch_launched(path: Path, fn: str) -> None:
    """Steps from host dispatches (no markers): every kernel, memset or copy whose launch call (by
    correlation id, raw events) came after a dispatch began and before the next one ends inside that
    dispatch's step, though the device ran some of it after the next dispatch began (by time alone
    7 of the MI300 capture's 105 launches ended after their step)."""
    disp = sorted((ev.start_ns, ev.start_ns + ev.duration_ns) for plane in raw_planes(path) for line in plane.lines
                  for ev in line.events if ev.name == f"PjitFunction({fn})")
    dev, calls = raw_correlated(path)
    calls = {c: start for c, (_, start, _) in calls.items()}
    work = [(e, c) for *_, e, c in dev]
    outer = [d for d in disp if not any(o != d and o[0] <= d[0] and d[1] <= o[1] for o in disp)]
    doc = jaxprof_json("steps", path)
    assert doc["step_summary"]["method"] == f"host dispatches of PjitFunction({fn})"
    steps = doc["steps"]
    assert len(steps) == len(outer)
    late = 0
    for k, (start, _) in enumerate(outer):
        nxt = outer[k + 1][0] if k + 1 < len(outer) else float("inf")
        step_end_ns = (steps[k]["start_ms"] + steps[k]["duration_ms"] - steps[k]["issued_start_ms"]) * 1e6
        for end, c in work:
            if c in calls and start <= calls[c] < nxt:
                assert end - start <= step_end_ns + 1, (k, end - start, step_end_ns)
                late += k + 1 < len(outer) and end > nxt
    assert late  # some of it ran after the next dispatch began: the case the time rule got wrong
