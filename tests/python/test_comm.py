"""jaxprof comm against the truth computed here: real 8-device XLA:CPU captures (tests/python/
comm_capture.py: psum, all_gather, psum_scatter, ppermute, a grouped psum, a program whose compute
can run beside its collective and one whose cannot) and the real 4-core TPU capture (12 all-reduce
runs). Expected numbers come from the raw events (jax.profiler.ProfileData), the HLO as XLA's own
parser prints it (hlo_truth) and XProf's hlo_stats, never from jaxprof's code.

The overlap truth groups op events by device as jaxprof's device table does: by the events'
device_ordinal once XLA:CPU devices are split (8 CPU devices), all in one while they are folded
(one /host:CPU device), so the same checks hold before and after."""
from __future__ import annotations

import collections
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

import hlo_truth
import xprof_oracle
from conftest import REAL_CAPTURES, jaxprof_json
from raw_events import cpu_ops, raw_planes, users_of

HERE = Path(__file__).resolve().parent
TPU = REAL_CAPTURES / "jax_tpu_v6e_4core_inference.xplane.pb.gz"
COLLECTIVES = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"}
MS = 1e-9  # ps per ms is 1e9: raw times are ns, jaxprof's ms


# ---- the truth -------------------------------------------------------------------------------------

def merge(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def covered(union, s, e):
    return sum(max(0.0, min(e, b) - max(s, a)) for a, b in union if a < e and b > s)


def tpu_ops(path: Path):
    """TPU XLA Ops events: (device, module, name, start_ns, end_ns), the name from the HLO text."""
    ops = []
    for plane in raw_planes(path):
        if not plane.name.startswith("/device:TPU:"):
            continue
        for line in plane.lines:
            if line.name != "XLA Ops":
                continue
            for ev in line.events:
                name = re.match(r"%?([\w.\-]+) =", ev.name)
                dur = dict(ev.stats).get("device_duration_ps", ev.duration_ns * 1e3) / 1e3  # the device's own
                ops.append((plane.name, "", name.group(1) if name else ev.name, ev.start_ns,
                            ev.start_ns + ev.duration_ns, ev.name, dur))
    return ops


def overlap_truth(ops, is_comm):
    """Per collective (module, name): count, total, hidden, and per instance (the k-th on each
    device) the spread of exposed time and the device that started last; per device the union
    totals; the union segments per device with their hidden time, for the steps."""
    comp, comm = collections.defaultdict(list), collections.defaultdict(list)
    for op in ops:
        if is_comm(op):
            comm[op[0]].append(op)
        elif not re.search(r"-(start|done)(\.\d+)?$", op[2]):  # an async half's time is no compute
            comp[op[0]].append(op)
    unions = {d: merge((o[3], o[4]) for o in v) for d, v in comp.items()}
    rows = collections.defaultdict(lambda: {"count": 0, "total": 0.0, "hidden": 0.0, "inst": collections.defaultdict(dict)})
    devices, segments = {}, {}
    for dev, evs in comm.items():
        u = unions.get(dev, [])
        per_key = collections.defaultdict(list)
        for op in sorted(evs, key=lambda o: o[3]):
            per_key[(op[1], op[2])].append(op)
        for key, inst in per_key.items():
            r = rows[key]
            for k, op in enumerate(inst):
                dur = op[6] if len(op) > 6 else op[4] - op[3]  # TPU: the device's own duration, as XProf
                hid = min(dur, covered(u, op[3], op[4]))
                r["count"] += 1
                r["total"] += dur
                r["hidden"] += hid
                r["inst"][k][dev] = (op[3], dur - hid)
        segs = merge((o[3], o[4]) for o in evs)
        segments[dev] = [(s, e, covered(u, s, e)) for s, e in segs]
        devices[dev] = [sum(e - s for s, e, _ in segments[dev]), sum(h for _, _, h in segments[dev])]
    dev_wait = collections.Counter()
    for r in rows.values():
        waits, late = [], collections.Counter()
        for per_dev in r["inst"].values():
            if len(per_dev) >= 2:
                exposed = [x for _, x in per_dev.values()]
                waits.append(max(exposed) - min(exposed))
                for dev, (_, x) in per_dev.items():
                    dev_wait[dev] += x - min(exposed)
                late[max(per_dev, key=lambda d: per_dev[d][0])] += 1
        r["wait"], r["wait_max"] = sum(waits), max(waits, default=0.0)
        r["last_count"] = max(late.values(), default=0)
    for dev in devices:
        devices[dev].append(dev_wait[dev])
    return rows, devices, segments


def hlo_size(prog, instr, n_devices):
    """S and n by the nccl-tests convention (doc/PERFORMANCE.md), from the HLO text."""
    operands = [prog.instrs[o] for o in instr.operands if o in prog.instrs]
    groups = re.search(r"replica_groups=\{(\{[0-9,]*\})", instr.attrs)
    pairs = re.findall(r"\{\d+,\d+\}", re.search(r"source_target_pairs=\{(.*?)\}\}", instr.attrs).group(0)) \
        if "source_target_pairs" in instr.attrs else None
    n = len(pairs) if pairs is not None else len(groups.group(1).strip("{}").split(",")) if groups else n_devices
    if instr.opcode == "collective-permute":
        return hlo_truth._nbytes(operands[0].shapes), n
    s = sum(hlo_truth._nbytes(o.shapes) for o in operands)
    return (s * n if instr.opcode == "all-gather" else s), n


def bus_factor(opcode, n):
    return {"all-reduce": 2 * (n - 1) / n, "all-gather": (n - 1) / n, "reduce-scatter": (n - 1) / n,
            "all-to-all": (n - 1) / n, "collective-permute": 1.0}[opcode]


# ---- the XLA:CPU capture -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cpu(tmp_path_factory):
    log = tmp_path_factory.mktemp("comm")
    proc = subprocess.run([sys.executable, str(HERE / "comm_capture.py"), str(log)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = log.rglob("*.xplane.pb")
    doc = jaxprof_json("comm", path)
    steps = jaxprof_json("steps", path)
    split = sum(d["platform"] == "cpu" for d in doc["devices"]) > 1
    progs = {p.module: p for p in hlo_truth.programs(path)}
    opcode = {(m, n): i.opcode for m, p in progs.items() for n, i in p.instrs.items()}
    ops = cpu_ops(path, split, users_of(progs))
    truth = overlap_truth(ops, lambda o: opcode.get((o[1], o[2])) in COLLECTIVES)
    return {"doc": doc, "steps": steps, "progs": progs, "ops": ops, "truth": truth, "opcode": opcode, "path": path}


def rows_by_key(doc):
    return {(r["module"], r["name"]): r for r in doc["comm"]}


def test_cpu_collectives_sizes_groups_and_busbw_from_the_hlo(cpu):
    """Every collective of the 7 programs: its type is its HLO opcode, S and n are what the HLO's
    operand shapes and replica groups give by the nccl-tests convention, algbw = S / mean time and
    busbw = algbw x the convention's factor."""
    rows = rows_by_key(cpu["doc"])
    seen = set()
    for (module, name), r in rows.items():
        prog = cpu["progs"][module]
        instr = prog.instrs[name]
        s, n = hlo_size(prog, instr, 8)
        assert r["type"] == instr.opcode
        assert r["bytes"] == s and r["group_size"] == n, (module, name)
        algbw = s * r["count"] / (r["total_ms"] / 1e3) / 1e9
        assert r["algbw_gbps"] == pytest.approx(algbw, rel=1e-6)
        assert r["busbw_gbps"] == pytest.approx(algbw * bus_factor(instr.opcode, n), rel=1e-6)
        seen.add((module, instr.opcode, s, n))
    kib = 1024
    assert seen == {("jit_c_psum", "all-reduce", 512 * kib, 8), ("jit_c_gather", "all-gather", 4096 * kib, 8),
                    ("jit_c_scatter", "reduce-scatter", 512 * kib, 8), ("jit_c_permute", "collective-permute", 512 * kib, 8),
                    ("jit_c_groups", "all-reduce", 512 * kib, 4), ("jit_c_overlap", "all-reduce", 512 * kib, 8),
                    ("jit_c_serial", "all-reduce", 256 * kib, 8)}


def test_cpu_counts_per_step_and_times_match_the_raw_events(cpu):
    """8 devices x 3 steps = 24 instances per collective, as the raw events count them, with their
    summed spans (start to the thunk's end event)."""
    rows = rows_by_key(cpu["doc"])
    rows_truth, _, _ = cpu["truth"]
    assert set(rows) == set(rows_truth)
    for key, r in rows.items():
        t = rows_truth[key]
        assert r["count"] == t["count"] == 24, key
        assert r["total_ms"] == pytest.approx(t["total"] * 1e-6, abs=1e-5), key


def test_cpu_hidden_exposed_wait_per_collective(cpu):
    """hidden = the instances' time under a compute op on the same device, exposed the rest; the
    wait per instance is the spread of exposed time across devices; all as the raw events give."""
    rows_truth, _, _ = cpu["truth"]
    for key, r in rows_by_key(cpu["doc"]).items():
        t = rows_truth[key]
        assert r["hidden_ms"] == pytest.approx(t["hidden"] * 1e-6, abs=1e-5), key
        assert r["exposed_ms"] == pytest.approx((t["total"] - t["hidden"]) * 1e-6, abs=1e-5), key
        assert r["wait_ms"] == pytest.approx(t["wait"] * 1e-6, abs=1e-5), key
        assert r["wait_max_ms"] == pytest.approx(t["wait_max"] * 1e-6, abs=1e-5), key
        assert r["last_count"] == t["last_count"], key
    # Whether XLA:CPU's thunk executor actually runs jit_c_overlap's matmul beside its psum depends
    # on its scheduling under load (a full-suite run saw 0 hidden), so only the raw events decide
    # here: some collective of the capture is partly hidden, as the truth says.
    assert any(t["hidden"] > 0 for t in rows_truth.values()) == any(
        r["hidden_ms"] > 0 for r in rows_by_key(cpu["doc"]).values())
    # jit_c_serial's psum takes the dot's result: it cannot run under the dot, whatever the pool
    # records of the dot's asynchronous end
    serial = {k: r for k, r in rows_by_key(cpu["doc"]).items() if k[0] == "jit_c_serial"}
    assert serial and all(r["hidden_ms"] == 0 for r in serial.values())


def test_cpu_device_overlap_and_steps(cpu):
    """Per device: |comm U|, |comm U n compute U| and their ratio; per step: the mean over devices
    of the hidden and exposed union time starting in the step."""
    _, dev_truth, segments = cpu["truth"]
    devs = [d for d in cpu["doc"]["devices"] if d["collective_ms"] > 0]
    assert len(devs) == len(dev_truth)
    assert sum(d["collective_ms"] for d in devs) == pytest.approx(sum(c for c, _, _ in dev_truth.values()) * 1e-6, abs=1e-5)
    assert sum(d["collective_hidden_ms"] for d in devs) == pytest.approx(
        sum(h for _, h, _ in dev_truth.values()) * 1e-6, abs=1e-5)
    assert sum(d["collective_wait_ms"] for d in devs) == pytest.approx(
        sum(w for _, _, w in dev_truth.values()) * 1e-6, abs=1e-5)
    for d in devs:
        assert d["overlap_pct"] == pytest.approx(100 * d["collective_hidden_ms"] / d["collective_ms"], abs=1e-3)
    steps = cpu["steps"]["steps"]
    assert len(steps) == 3
    hid_all = exp_all = 0.0
    for s in steps:
        lo, hi = s["start_ms"] * 1e6, (s["start_ms"] + s["duration_ms"]) * 1e6  # ns
        hid, exp, n = 0.0, 0.0, 0
        for segs in segments.values():
            mine = [(a, b, h) for a, b, h in segs if lo <= a < hi]
            n += bool(mine)
            hid += sum(h for _, _, h in mine)
            exp += sum(b - a - h for a, b, h in mine)
        assert n > 0
        assert s["collective_hidden_ms"] == pytest.approx(hid / n * 1e-6, abs=2e-5)
        assert s["collective_exposed_ms"] == pytest.approx(exp / n * 1e-6, abs=2e-5)
        hid_all, exp_all = hid_all + hid / n * 1e-6, exp_all + exp / n * 1e-6
    # the findings' rule on those numbers: exposed >= 20% of step time is communication_bound (40%:
    # bad), else collectives >= 10% with under 25% hidden is poor_overlap
    total = sum(s["duration_ms"] for s in steps)
    exp_pct, comm_pct = 100 * exp_all / total, 100 * (hid_all + exp_all) / total
    want = ("communication_bound", "bad" if exp_pct >= 40 else "warning") if exp_pct >= 20 else \
        ("poor_overlap", "warning") if comm_pct >= 10 and hid_all / (hid_all + exp_all) < 0.25 else None
    found = {f["id"]: f for f in jaxprof_json("findings", cpu["path"])["findings"]}
    got = [(i, f["severity"]) for i, f in found.items() if i in ("communication_bound", "poor_overlap")]
    assert got == ([want] if want else [])
    if want:
        assert f"{exp_pct:.0f}% of step time" in found[want[0]]["evidence"] or want[0] == "poor_overlap"


# ---- the real TPU capture ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tpu():
    return jaxprof_json("comm", TPU)


def test_tpu_all_reduce_against_xprof_and_the_hlo(tpu):
    """The 12 all-reduce runs (3 on each of 4 cores): count and time as XProf's hlo_stats has them;
    S = f32[5,1024,1024,256] = 5 GiB and n = 2 (replica_groups=[4,2]<=[2,4]T(1,0)) from the HLO
    the events carry; busbw = algbw x 2(n-1)/n."""
    (r,) = tpu["comm"]
    xp = [row for row in xprof_oracle.xprof_numbers(TPU, ("hlo_stats",))["hlo_ops"] if row["name"] == "all-reduce"]
    assert r["count"] == sum(x["occurrences"] for x in xp) == 12
    assert r["total_ms"] * 1e3 == pytest.approx(sum(x["total_us"] for x in xp), rel=1e-6)
    ops = tpu_ops(TPU)
    text = next(o[5] for o in ops if o[2] == "all-reduce")
    dims = [int(v) for v in re.search(r"all-reduce\(f32\[([0-9,]+)\]", text).group(1).split(",")]
    groups = re.search(r"replica_groups=\[(\d+),(\d+)\]", text)
    s, n = 4 * dims[0] * dims[1] * dims[2] * dims[3], int(groups.group(2))
    assert (r["bytes"], r["group_size"], r["devices"]) == (s, n, 4) == (5 << 30, 2, 4)
    algbw = s * 12 / (r["total_ms"] / 1e3) / 1e9
    assert r["algbw_gbps"] == pytest.approx(algbw, rel=1e-6)
    assert r["busbw_gbps"] == pytest.approx(algbw * 2 * (n - 1) / n, rel=1e-6)


def test_python_comm_rows_are_the_json_rows(tpu):
    """jaxprof.load(...).comm() returns the comm table as typed rows."""
    import jaxprof
    (row,) = jaxprof.load(str(TPU)).comm()
    assert row.to_dict() == tpu["comm"][0] and row.busbw_gbps == row["busbw_gbps"]


def test_tpu_wait_and_last_device_from_the_raw_events(tpu):
    """Per instance across the 4 cores: the spread of exposed time and the core that started last."""
    (r,) = tpu["comm"]
    rows, devices, _ = overlap_truth(tpu_ops(TPU), lambda o: o[2] == "all-reduce")
    t = rows[("", "all-reduce")]
    assert t["count"] == 12
    assert r["hidden_ms"] == pytest.approx(t["hidden"] * 1e-6, abs=1e-5)
    assert r["wait_ms"] == pytest.approx(t["wait"] * 1e-6, abs=1e-5) and r["wait_ms"] > 0
    assert r["wait_max_ms"] == pytest.approx(t["wait_max"] * 1e-6, abs=1e-5)
    assert r["last_count"] == t["last_count"]
    by_name = {d["name"]: d for d in tpu["devices"]}
    for dev, (comm, hidden, wait) in devices.items():  # per core: its union, and its wait for the last
        assert by_name[dev]["collective_ms"] == pytest.approx(comm * 1e-6, abs=1e-5)
        assert by_name[dev]["collective_hidden_ms"] == pytest.approx(hidden * 1e-6, abs=1e-5)
        assert by_name[dev]["collective_wait_ms"] == pytest.approx(wait * 1e-6, abs=1e-5)
    assert sum(by_name[d]["collective_wait_ms"] > 0 for d in devices) >= 3


# ---- per collective instance (comm_instances) --------------------------------------------------------

def instance_truth(rows, name_of):
    """Per (module, name, k): the instance across its devices from the raw events' (start, exposed)
    per device: devices, earliest and latest start, exposed min and max, the device that started
    last, and the modified z-scores 0.6745 (start - median) / MAD over >= 3 devices (Iglewicz and
    Hoaglin; above 3.5 a straggler)."""
    out = {}
    for (module, name), r in rows.items():
        for k, per_dev in r["inst"].items():
            starts = {name_of(d): s for d, (s, _) in per_dev.items()}
            exposed = [x for _, x in per_dev.values()]
            t = {"devices": len(per_dev), "start": min(starts.values()), "last_start": max(starts.values()),
                 "exp_min": min(exposed), "exp_max": max(exposed),
                 "last": max(starts, key=starts.get) if len(per_dev) > 1 else "", "z": None, "stragglers": []}
            if len(per_dev) >= 3:
                xs = sorted(starts.values())
                med = statistics.median(xs)
                mad = statistics.median(abs(x - med) for x in xs)
                if mad > 0:
                    z = {d: 0.6745 * (s - med) / mad for d, s in starts.items()}
                    t["z"] = max(z.values())
                    t["stragglers"] = sorted((d for d in z if z[d] > 3.5), key=lambda d: -z[d])
            out[(module, name, k)] = t
    return out


def check_instances(doc, truth, steps=None):
    got = doc["comm_instances"]
    assert len(got) == len(truth)
    assert [g["start_ms"] for g in got] == sorted(g["start_ms"] for g in got)  # by earliest start
    types = {(r["module"], r["name"]): r["type"] for r in doc["comm"]}
    n_strag = collections.Counter()
    for g in got:
        key = (g["module"], g["name"], g["index"])
        t = truth[key]
        assert g["type"] == types[key[:2]] and g["devices"] == t["devices"], key
        assert g["start_ms"] * 1e6 == pytest.approx(t["start"], abs=1), key
        assert g["arrival_spread_ms"] * 1e6 == pytest.approx(t["last_start"] - t["start"], abs=1), key
        assert g["exposed_min_ms"] * 1e6 == pytest.approx(t["exp_min"], abs=10), key
        assert g["exposed_max_ms"] * 1e6 == pytest.approx(t["exp_max"], abs=10), key
        assert g["wait_ms"] * 1e6 == pytest.approx(t["exp_max"] - t["exp_min"], abs=10), key
        assert g["last_device"] == t["last"], key
        if t["z"] is None:
            assert g["z_max"] is None and not g["straggler"], key
        else:
            # the raw reader's starts are whole ns, jaxprof's ps: on the TPU's starts, a few µs apart
            # (MAD about 1 µs), that moves a z-score by about 0.1%
            assert g["z_max"] == pytest.approx(t["z"], rel=5e-3), key
        assert g["straggler"] == bool(t["stragglers"]) and g["stragglers"] == len(t["stragglers"]), key
        assert g["straggler_device"] == (t["stragglers"][0] if t["stragglers"] else ""), key
        n_strag[key[:2]] += len(t["stragglers"])
        if steps is not None:
            mine = [s["step"] for s in steps if s["start_ms"] <= g["start_ms"] < s["start_ms"] + s["duration_ms"]]
            assert g["step"] == (mine[0] if mine else None), key
    # the per-op row's numbers are these instances' sums
    for r in doc["comm"]:
        mine = [g for g in got if (g["module"], g["name"]) == (r["module"], r["name"])]
        assert r["wait_ms"] == pytest.approx(sum(g["wait_ms"] for g in mine), abs=1e-5)
        assert r["stragglers"] == n_strag[(r["module"], r["name"])]
    return got


def test_cpu_instances_from_the_raw_events(cpu):
    """Each instance (the k-th run of a collective on each of the 8 devices): its devices, earliest
    start, how late the last arrived and which device it was, exposed time min and max and their
    spread (the wait), the robust z-score of the starts and the stragglers, the step it falls in:
    all as the raw events give them. The capture's scheduler makes some devices late enough to be
    stragglers (the check holds either way; the flag is asserted against the z-scores)."""
    rows, _, _ = cpu["truth"]
    names = {d["name"] for d in cpu["doc"]["devices"]}
    name_of = (lambda d: f"/device:CPU:{d}") if "/device:CPU:0" in names else (lambda d: "/host:CPU")
    got = check_instances(cpu["doc"], instance_truth(rows, name_of), cpu["steps"]["steps"])
    assert len(got) == sum(len(r["inst"]) for r in rows.values())
    assert {g["step"] for g in got} == {s["step"] for s in cpu["steps"]["steps"]}


def test_tpu_instances_from_the_raw_events(tpu):
    """The v6e capture's 12 all-reduce runs are 3 instances on 4 cores each: per instance the
    spread of exposed time, the core that started last and the z-scores of the 4 starts."""
    rows, _, _ = overlap_truth(tpu_ops(TPU), lambda o: o[2] == "all-reduce")
    module = tpu["comm"][0]["module"]  # the raw reader takes no module from the TPU's events
    truth = {(module, n, k): t for (_, n, k), t in instance_truth(rows, lambda d: d).items()}
    got = check_instances(tpu, truth)
    assert len(got) == 3 and all(g["devices"] == 4 and g["wait_ms"] > 0 for g in got)
    assert sum(g["wait_ms"] for g in got) == pytest.approx(tpu["comm"][0]["wait_ms"], abs=1e-5)


def test_instances_text_csv_and_table_flag(cpu):
    """Text shows the 20 instances with the longest wait (--top more); --table comm_instances gives
    them all as CSV, one row each, with the JSON's keys."""
    from conftest import run_jaxprof
    path, n = cpu["path"], len(cpu["doc"]["comm_instances"])
    text = run_jaxprof("comm", path, "--width", "120").stdout
    assert f"Instances ({n}: the k-th run of an op on each device; the {min(n, 20)} with the longest wait" in text
    csv = run_jaxprof("comm", path, "--table", "comm_instances", "--csv").stdout.splitlines()
    assert csv[0].split(",") == list(cpu["doc"]["comm_instances"][0])
    assert len(csv) == n + 1
    top = run_jaxprof("comm", path, "--table", "comm_instances", "--sort", "wait_ms", "--top", "1", "--json")
    (one,) = json.loads(top.stdout)["comm_instances"]
    assert one["wait_ms"] == max(g["wait_ms"] for g in cpu["doc"]["comm_instances"])


def test_python_comm_instances_are_the_json_rows(tpu):
    import jaxprof
    rows = jaxprof.load(str(TPU)).comm_instances()
    assert [r.to_dict() for r in rows] == tpu["comm_instances"] and rows[0].wait_ms == rows[0]["wait_ms"]


# ---- a device that reaches its collectives late (straggling_device) ---------------------------------

@pytest.fixture(scope="module")
def late(tmp_path_factory):
    """straggler_capture.py: 8 devices, a psum per step, device 3 alone doing ~30x the work first."""
    log = tmp_path_factory.mktemp("late")
    proc = subprocess.run([sys.executable, str(HERE / "straggler_capture.py"), str(log)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = log.rglob("*.xplane.pb")
    progs = {p.module: p for p in hlo_truth.programs(path)}
    opcode = {(m, n): i.opcode for m, p in progs.items() for n, i in p.instrs.items()}
    rows, _, _ = overlap_truth(cpu_ops(path, True, users_of(progs)), lambda o: opcode.get((o[1], o[2])) in COLLECTIVES)
    return {"path": path, "truth": instance_truth(rows, lambda d: f"/device:CPU:{d}")}


def test_a_late_device_is_named_by_the_straggling_device_finding(late):
    """The device the raw events show as the robust straggler (the largest modified z-score of the
    psum's start, above 3.5) in the most instances is the one the finding names, with that count,
    the instances on >= 3 devices, and the others' wait in them (exposed max - min, summed)."""
    truth = late["truth"]
    by_device = collections.defaultdict(list)
    for t in truth.values():
        if t["stragglers"]:
            by_device[t["stragglers"][0]].append(t["exp_max"] - t["exp_min"])
    device, waits = max(by_device.items(), key=lambda kv: (len(kv[1]), sum(kv[1])))
    assert device == "/device:CPU:3" and len(waits) >= 3  # the program makes device 3 the late one
    found = {f["id"]: f for f in jaxprof_json("findings", late["path"])["findings"]}
    f = found["straggling_device"]
    eligible = sum(t["devices"] >= 3 for t in truth.values())
    assert f["evidence"].startswith(f"{device} started late") and f" in {len(waits)} of {eligible} collective" in f["evidence"]
    wait_ms = float(re.search(r"the others waited ([\d.]+) ms", f["evidence"]).group(1))
    assert wait_ms == pytest.approx(sum(waits) / 1e6, abs=0.011)
    step_ms = sum(s["duration_ms"] for s in jaxprof_json("steps", late["path"])["steps"])
    assert f["severity"] == ("bad" if sum(waits) / 1e6 >= 0.15 * step_ms else "warning")
    assert "comm_instances" in f["fix"]


def test_straggling_device_follows_its_rule_on_balanced_devices(cpu):
    """The 8-device program whose devices all do the same work: the finding is there exactly when
    one device straggled (by the raw events) in at least 3 instances and the others' wait in them
    is at least 5 % of step time, and then names that device."""
    truth = instance_truth(cpu["truth"][0], lambda d: f"/device:CPU:{d}")
    by_device = collections.defaultdict(list)
    for t in truth.values():
        if t["stragglers"]:
            by_device[t["stragglers"][0]].append(t["exp_max"] - t["exp_min"])
    step_ms = sum(s["duration_ms"] for s in cpu["steps"]["steps"])
    top = max(by_device.items(), key=lambda kv: (len(kv[1]), sum(kv[1])), default=None)
    due = top is not None and len(top[1]) >= 3 and sum(top[1]) / 1e6 >= 0.05 * step_ms
    found = {f["id"]: f for f in jaxprof_json("findings", cpu["path"])["findings"]}
    assert ("straggling_device" in found) == due
    if due:
        assert found["straggling_device"]["evidence"].startswith(top[0])
