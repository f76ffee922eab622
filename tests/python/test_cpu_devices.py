"""XLA:CPU devices as they are: a real 8-device CPU program (--xla_force_host_platform_device_count=8)
captured in a subprocess shows 8 devices, each with its own ops and busy time, read back from the
raw events with jax.profiler.ProfileData (the thunks' `device_ordinal` stat), never through
jaxprof; a one-device program under the same flag keeps the single "/host:CPU"."""
from __future__ import annotations

import collections
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import jaxprof_json, only_xplane, run_jaxprof
from raw_events import raw_planes

N_DEV = 8
STEPS = 3

# Two programs per step: a psum over an array sharded on 8 devices (shard_map: a local matmul,
# then a cross-device all-reduce) and a per-device matmul of a sharded batch (jit, NamedSharding).
CAPTURE = textwrap.dedent(f"""
    import os, sys
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count={N_DEV}"
    import jax, jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P
    assert len(jax.devices()) == {N_DEV}, jax.devices()
    mesh = jax.make_mesh(({N_DEV},), ("x",))

    @jax.jit
    def reduce(a, b):
        def body(a, b):
            return jax.lax.psum(a @ b, "x")
        return jax.shard_map(body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P())(a, b)

    @jax.jit
    def local(x, w):
        return jnp.tanh(x @ w)

    a = jax.device_put(jnp.ones((128, 256)), NamedSharding(mesh, P(None, "x")))
    b = jax.device_put(jnp.ones((256, 128)), NamedSharding(mesh, P("x", None)))
    x = jax.device_put(jnp.ones(({N_DEV} * 32, 128)), NamedSharding(mesh, P("x", None)))
    w = jax.device_put(jnp.ones((128, 128)), NamedSharding(mesh, P()))
    one = jnp.ones((128, 128))
    # the async capture's operands: enough work per run (8 x 512x256 @ 256x512) that a loaded host
    # still dispatches the next step before this one's run ends
    a2 = jax.device_put(jnp.ones((512, 2048)), NamedSharding(mesh, P(None, "x")))
    b2 = jax.device_put(jnp.ones((2048, 512)), NamedSharding(mesh, P("x", None)))
    for _ in range(2):  # compiled before the capture
        reduce(a, b).block_until_ready(); local(x, w).block_until_ready(); local(one, one).block_until_ready()
        reduce(a2, b2).block_until_ready()

    jax.profiler.start_trace(sys.argv[1] + "/multi")
    for i in range({STEPS}):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            reduce(a, b).block_until_ready()
            local(x, w).block_until_ready()
    jax.profiler.stop_trace()

    jax.profiler.start_trace(sys.argv[1] + "/async")  # dispatched ahead: a step's work runs into the next
    for i in range({STEPS}):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            r = reduce(a2, b2)
    r.block_until_ready()
    jax.profiler.stop_trace()

    jax.profiler.start_trace(sys.argv[1] + "/single")  # unsharded: device 0 alone
    for i in range({STEPS}):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            local(one, one).block_until_ready()
    jax.profiler.stop_trace()
""")


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("cpu_devices")
    proc = subprocess.run([sys.executable, "-c", CAPTURE, str(root)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return only_xplane(root / "multi"), only_xplane(root / "single"), only_xplane(root / "async")


def raw_thunks(xplane: Path) -> tuple[list[dict], dict[int, int]]:
    """XLA:CPU's op thunks on /host:CPU (events with hlo_op) and the ends of the `end: <op>` events
    by their consumer flow id, from the raw events."""
    thunks, ends = [], {}
    for plane in raw_planes(xplane):
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            for ev in line.events:
                st = dict(ev.stats)
                if "hlo_op" in st:
                    thunks.append({"op": st["hlo_op"], "module": st["hlo_module"], "run": st["run_id"],
                                   "dev": st.get("device_ordinal"), "flow": st.get("_p"),
                                   "start": ev.start_ns, "end": ev.start_ns + ev.duration_ns})
                elif ev.name.startswith("end: ") and "_c" in st:
                    ends.setdefault(st["_c"], ev.start_ns + ev.duration_ns)
    return thunks, ends


def op_spans(thunks: list[dict], ends: dict[int, int]) -> list[tuple[int, float, float]]:
    """(device, start, end) of each op: an asynchronous op lasts to its linked `end:` event unless
    that event came after the next execution (run_id) of its module began (docs/design.md)."""
    run_start: dict[tuple[str, int], float] = {}
    for t in thunks:
        k = (t["module"], t["run"])
        run_start[k] = min(run_start.get(k, t["start"]), t["start"])
    starts = collections.defaultdict(list)
    for (module, _), s in run_start.items():
        starts[module].append(s)
    out = []
    for t in thunks:
        end = t["end"]
        if t["flow"] in ends:
            mine = run_start[(t["module"], t["run"])]
            later = [s for s in starts[t["module"]] if s > mine]
            if not later or ends[t["flow"]] <= min(later):
                end = max(end, ends[t["flow"]])
        out.append((t["dev"], t["start"], end))
    return out


def union_ns(spans: list[tuple[float, float]]) -> float:
    total, cur = 0.0, None
    for a, b in sorted(spans):
        if cur and a <= cur[1]:
            cur[1] = max(cur[1], b)
        else:
            total += cur[1] - cur[0] if cur else 0
            cur = [a, b]
    return total + (cur[1] - cur[0] if cur else 0)


def test_eight_devices_each_with_its_own_ops_and_busy_time(captures):
    multi = captures[0]
    thunks, ends = raw_thunks(multi)
    assert {t["dev"] for t in thunks} == set(range(N_DEV))  # every thunk names its device
    count = collections.Counter(t["dev"] for t in thunks)
    busy = {d: union_ns([(a, b) for dd, a, b in op_spans(thunks, ends) if dd == d]) for d in range(N_DEV)}

    report = jaxprof_json("report", multi)
    devs = report["devices"]
    assert [d["name"] for d in devs] == [f"/device:CPU:{i}" for i in range(N_DEV)]
    for i, d in enumerate(devs):
        assert d["platform"] == "cpu"
        assert d["ops"] == count[i], (i, d)
        assert d["busy_ms"] == pytest.approx(busy[i] / 1e6, rel=1e-6, abs=1e-6), (i, d)
    assert report["device_busy_ms"] == pytest.approx(sum(busy.values()) / 1e6, rel=1e-6)
    # the psum's and the matmul's programs ran on every device, once a step each
    assert all(count[i] >= 2 * STEPS for i in range(N_DEV)), count


def test_ops_run_on_all_eight_devices(captures):
    multi = captures[0]
    thunks, _ = raw_thunks(multi)
    per_op = collections.defaultdict(set)
    n = collections.Counter()
    for t in thunks:
        per_op[(t["module"], t["op"])].add(t["dev"])
        n[(t["module"], t["op"])] += 1
    rows = jaxprof_json("ops", multi)["ops"]
    got = {(r["module"], r["name"]): r for r in rows}
    assert set(got) == set(per_op)
    for key, r in got.items():
        assert r["devices"] == len(per_op[key]) == N_DEV, (key, r)
        assert r["count"] == n[key], (key, r)
    collectives = [r for r in rows if r["category"] == "collective"]
    assert collectives and all(r["module"] == "jit_reduce" for r in collectives)


@pytest.mark.parametrize("index", [0, 5])
def test_device_option_picks_one_cpu_device(captures, index):
    multi = captures[0]
    thunks, ends = raw_thunks(multi)
    mine = [t for t in thunks if t["dev"] == index]
    n = collections.Counter((t["module"], t["op"]) for t in mine)
    busy = union_ns([(a, b) for d, a, b in op_spans(thunks, ends) if d == index])

    report = jaxprof_json("report", multi, "--device", str(index))
    assert [d["name"] for d in report["devices"]] == [f"/device:CPU:{index}"]
    assert report["devices"][0]["ops"] == len(mine)
    assert report["devices"][0]["busy_ms"] == pytest.approx(busy / 1e6, rel=1e-6, abs=1e-6)
    rows = jaxprof_json("ops", multi, "--device", str(index))["ops"]
    assert {(r["module"], r["name"]): r["count"] for r in rows} == dict(n)
    assert all(r["devices"] == 1 and r["device"] == f"/device:CPU:{index}" for r in rows)
    text = run_jaxprof("ops", multi, "--device", str(index))
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].split()[-1] == "devs"


def test_one_device_program_keeps_the_host_cpu_device(captures):
    single = captures[1]
    thunks, _ = raw_thunks(single)
    assert thunks and {t["dev"] for t in thunks} == {0}  # one device named: today's single device
    report = jaxprof_json("report", single)
    assert [(d["name"], d["ops"]) for d in report["devices"]] == [("/host:CPU", len(thunks))]
    assert all(r["devices"] == 1 and r["device"] == "/host:CPU" for r in jaxprof_json("ops", single)["ops"])
    assert [d["name"] for d in jaxprof_json("report", single, "--device", "0")["devices"]] == ["/host:CPU"]


def test_a_marked_step_ends_when_its_run_ends_on_every_device(captures):
    """Steps dispatched ahead (no sync inside the markers): the k-th dispatch ran the k-th run
    (run_id) of jit_reduce on all 8 devices, and its step lasts until the last device's part of
    that run ends, or the next marker begins (docs/design.md, steps method 1)."""
    xplane = captures[2]
    thunks, ends = raw_thunks(xplane)
    markers, dispatches = [], []
    for plane in raw_planes(xplane):
        for line in plane.lines:
            for ev in line.events:
                st = dict(ev.stats)
                if "step_num" in st and "_r" in st:
                    markers.append((ev.start_ns, ev.start_ns + ev.duration_ns))
                elif ev.name == "PjitFunction(reduce)":
                    dispatches.append((ev.start_ns, ev.start_ns + ev.duration_ns))
    markers.sort()
    dispatches.sort()  # JAX nests one PjitFunction(reduce) in another: the outer one is the dispatch
    outer = [d for i, d in enumerate(dispatches) if not (i and dispatches[i - 1][0] <= d[0] <= dispatches[i - 1][1])]
    assert len(markers) == STEPS and len(outer) == STEPS
    spans = op_spans(thunks, ends)
    run_start, run_end = {}, collections.defaultdict(float)
    for t, (dev, a, b) in zip(thunks, spans):
        if t["module"] == "jit_reduce":
            run_start[t["run"]] = min(run_start.get(t["run"], a), a)
            run_end[t["run"]] = max(run_end[t["run"]], b)
    runs = sorted(run_start, key=run_start.get)
    assert len(runs) == STEPS
    assert all(len({t["dev"] for t in thunks if t["run"] == r}) == N_DEV for r in runs)
    bounds = [markers[0][0]]
    for i in range(STEPS - 1):
        end = max(markers[i][1], run_end[runs[i]])
        bounds.append(max(markers[i + 1][0], end, bounds[-1]))
    steps = jaxprof_json("steps", xplane)["steps"]
    assert [s["step"] for s in steps] == list(range(STEPS))
    got = [s["start_ms"] - steps[0]["start_ms"] for s in steps]
    want = [(b - bounds[0]) / 1e6 for b in bounds]
    assert got == pytest.approx(want, abs=2e-6)
    # the work really ran past the markers: a step ended on its run's last device, not a marker
    assert any(run_end[runs[i]] > markers[i + 1][0] for i in range(STEPS - 1))
