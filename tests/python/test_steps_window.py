"""`--step N` / `--steps A:B`: the tables of a few steps, checked against the raw events of a real
JAX CPU capture (its Chrome trace from `jaxprof export`: op events whose start lies in a step)."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import REAL_CAPTURES, capture_steps, jaxprof_json, run_jaxprof

N_STEPS = 6


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    return capture_steps(tmp_path_factory.mktemp("steps_window"), start_step=0, num_steps=N_STEPS, total=N_STEPS)


@pytest.fixture(scope="module")
def raw_ops(log_dir, tmp_path_factory) -> list[tuple[str, str, float, float]]:
    """Every XLA op occurrence of the capture as (module, op, start_us, end_us), from the exported
    Chrome trace. XLA:CPU may finish an op asynchronously: its `end: <op>` event, linked by the
    flow id (_p on the op, _c on the end event), then marks where the op ends."""
    out = tmp_path_factory.mktemp("steps_window_export") / "trace.json"
    proc = run_jaxprof("export", log_dir, "-o", out, "--format", "chrome")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    events = [e for e in (doc["traceEvents"] if isinstance(doc, dict) else doc) if e.get("ph") == "X"]
    ends: dict[tuple[str, int], list[float]] = defaultdict(list)
    for e in events:
        if e["name"].startswith("end: ") and "_c" in e.get("args", {}):
            ends[(e["name"][5:], e["args"]["_c"])].append(e["ts"] + e["dur"])
    ops = []
    for e in events:
        args = e.get("args", {})
        if "hlo_op" not in args or e["name"].startswith("end: "):
            continue
        start, end = e["ts"], e["ts"] + e["dur"]
        later = [t for t in ends.get((args["hlo_op"], args.get("_p")), []) if t >= start]
        ops.append((args["hlo_module"], args["hlo_op"], start, max([end, *later])))
    assert ops, "the capture holds no XLA op events"
    return ops


def steps_of(log_dir: Path, *args: str) -> list[dict]:
    return jaxprof_json("steps", log_dir, *args)["steps"]


def in_step(ops, step: dict) -> list[tuple[str, str, float, float]]:
    lo = step["start_ms"] * 1000
    hi = lo + step["duration_ms"] * 1000
    return [o for o in ops if lo <= o[2] < hi]


def test_one_step_has_exactly_the_op_events_that_start_in_it(log_dir, raw_ops):
    steps = steps_of(log_dir)
    assert [s["step"] for s in steps] == list(range(N_STEPS))
    for k in (0, 3, N_STEPS - 1):
        want = in_step(raw_ops, steps[k])
        assert want, f"step {k} holds no op events"
        got = jaxprof_json("ops", log_dir, "--steps", f"{k}:{k}")["ops"]
        assert Counter({(o["module"], o["name"]): o["count"] for o in got}) == Counter((m, n) for m, n, _, _ in want)
        total_us: dict[tuple[str, str], float] = defaultdict(float)
        for m, n, a, b in want:
            total_us[(m, n)] += b - a
        for o in got:
            assert o["total_ms"] * 1000 == pytest.approx(total_us[(o["module"], o["name"])], abs=0.01)
        # --step N is the same window.
        assert jaxprof_json("ops", log_dir, "--step", str(k))["ops"] == got


def test_the_window_steps_table_is_the_full_runs_rows(log_dir):
    full = steps_of(log_dir)
    doc = jaxprof_json("steps", log_dir, "--steps", "2:4")
    assert [s["step"] for s in doc["steps"]] == [2, 3, 4]
    for got, want in zip(doc["steps"], full[2:5]):
        for key in ("start_ms", "duration_ms", "compute_ms", "host_ms", "idle_ms", "ops", "flops"):
            assert got[key] == want[key], (key, got, want)
    summary = doc["step_summary"]
    durations = sorted(s["duration_ms"] for s in full[2:5])
    assert summary["count"] == 3
    assert summary["median_ms"] == pytest.approx(durations[1], abs=1e-6)
    assert summary["mean_ms"] == pytest.approx(sum(durations) / 3, abs=1e-6)
    # The window's span is the steps' time, first start to last end.
    assert doc["span_ms"] == pytest.approx(full[4]["start_ms"] + full[4]["duration_ms"] - full[2]["start_ms"], abs=1e-5)


def test_open_ended_ranges(log_dir):
    assert [s["step"] for s in steps_of(log_dir, "--steps", "4:")] == [4, 5]
    assert [s["step"] for s in steps_of(log_dir, "--steps", ":1")] == [0, 1]
    assert [s["step"] for s in steps_of(log_dir, "--steps", "3:99")] == [3, 4, 5]


def test_per_step_tables_add_up_to_the_whole_run(log_dir, raw_ops):
    """Every op occurrence starts in one step or outside all of them: the steps' op tables plus
    the occurrences outside any step are the whole-run table, count and self time."""
    steps = steps_of(log_dir)
    whole = {(o["module"], o["name"]): o for o in jaxprof_json("ops", log_dir)["ops"]}
    count: Counter = Counter()
    self_ms: dict[tuple[str, str], float] = defaultdict(float)
    for s in steps:
        for o in jaxprof_json("ops", log_dir, "--step", str(s["step"]))["ops"]:
            count[(o["module"], o["name"])] += o["count"]
            self_ms[(o["module"], o["name"])] += o["self_ms"]
    inside = {id(o) for s in steps for o in in_step(raw_ops, s)}
    outside = Counter((m, n) for o in raw_ops if id(o) not in inside for m, n in [o[:2]])
    assert count + outside == Counter({k: o["count"] for k, o in whole.items()})
    for k, o in whole.items():
        if not outside[k]:
            assert self_ms[k] == pytest.approx(o["self_ms"], abs=1e-5 * len(steps))
    # Scopes too: device scope time of the steps adds up to the run's when no op lies outside.
    if not outside:
        total: dict[str, float] = defaultdict(float)
        for s in steps:
            for r in jaxprof_json("scopes", log_dir, "--step", str(s["step"]))["scopes"]:
                if r["kind"] == "device":
                    total[r["scope"]] += r["total_ms"]
        for r in jaxprof_json("scopes", log_dir)["scopes"]:
            if r["kind"] == "device":
                assert total[r["scope"]] == pytest.approx(r["total_ms"], abs=1e-5 * len(steps))


@pytest.mark.parametrize("command", ["report", "lines", "flame", "transfers", "memory", "compiles", "findings"])
def test_every_other_section_takes_the_window(log_dir, command):
    proc = run_jaxprof(command, log_dir, "--steps", "1:2", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    if "steps" in doc:
        assert [s["step"] for s in doc["steps"]] == [1, 2]


@pytest.mark.parametrize("args, message", [
    (["ops", "--steps", "40:50"], f"no step numbered 40 to 50 (steps are 0-{N_STEPS - 1})"),
    (["ops", "--step", "99"], f"no step numbered 99 (steps are 0-{N_STEPS - 1})"),
    (["steps", "--steps", "40:"], f"no step numbered 40 or more (steps are 0-{N_STEPS - 1})"),
    (["ops", "--steps", "4:2"], "the first step is after the last"),
    (["ops", "--steps", "a:b"], "want N, A:B, A: or :B"),
    (["ops", "--steps", "1:2:3"], "want N, A:B, A: or :B"),
    (["ops", "--steps", "-1:2"], "want N, A:B, A: or :B"),
    (["ops", "--step", "1:2"], "--step takes one step number"),
    (["kernels", "--step", "1"], "kernels cannot take --step/--steps"),
    (["hosts", "--steps", "1:2"], "hosts cannot take --step/--steps"),
])
def test_bad_ranges_exit_2_and_say_why(log_dir, args, message):
    proc = run_jaxprof(args[0], log_dir, *args[1:])
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


REAL = REAL_CAPTURES  # captures by others (README there)


@pytest.mark.parametrize("capture", ["jax_tpu_v6e_4core_inference.xplane.pb.gz", "mi300_jax08_conv.xplane.pb.gz"])
def test_real_tpu_and_gpu_windows_hold_each_steps_ops(capture):
    """On a TPU capture (device Steps lines, 4 chips) and an MI300 one, each step's window holds as
    many op occurrences as the steps table counts in that step (counted apart, by steps.c), and no
    op more often than the whole run."""
    path = REAL / capture
    steps = steps_of(path)
    whole = Counter({(o["module"], o["name"]): o["count"] for o in jaxprof_json("ops", path)["ops"]})
    seen: Counter = Counter()
    for s in steps[:5]:
        ops = jaxprof_json("ops", path, "--step", str(s["step"]))["ops"]
        assert sum(o["count"] for o in ops) == s["ops"], s["step"]
        seen.update({(o["module"], o["name"]): o["count"] for o in ops})
    assert not seen - whole
