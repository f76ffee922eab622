"""Findings that catch what is planted, and nothing else, on a busy machine (issue 31, items 13, 15).

- Single slow steps (`slow_step`): a real Flax NNX + Optax language model run under `jaxprof run`
  plants a slow data loader and a helper that recompiles every 5 steps in the same step; a jitted
  MLP captured with plain jax.profiler plants a slow annotated loader in one step and a recompile
  in another. Each such step must be named, with its cause, the time it cost and a fix.
- False alarms: healthy jitted programs on device-resident data, captured 3 times each with plain
  jax.profiler (5 steps, StepTraceAnnotation), must get no finding at all, while a busy-loop
  process started by this module competes for the CPU (the planted programs run under it too).
- Known answers on synthetic profiles (xplane_gen): the exact evidence of a slow step held up by
  a copy, and both sides of each noise rule (the 10 ms jitter floor and the steps' own spread for
  a slow step; the typical step and the spread of the shares for the loop-wide rules).
- The real TF BERT capture (29.9% device idle, "potentially input-bound" in XProf) gets a
  device_idle warning.

The rules are documented in docs/design.md ("Findings") and src/analyses/findings.c.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import JAXPROF_BIN, REAL_CAPTURES, jaxprof_json, profile_steps, run_jaxprof
from xplane_gen import US, Uint, XSpace

HERE = Path(__file__).resolve().parent
SLEEP_S = 0.15  # every planted slow loader sleeps this long


@pytest.fixture(scope="module")
def busy_machine() -> Iterator[None]:
    """A background process spinning on one core for as long as this module's tests run."""
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        assert spin.poll() is None, "the busy loop did not start"
        yield
    finally:
        spin.terminate()
        try:
            spin.wait(timeout=10)
        except subprocess.TimeoutExpired:
            spin.kill()
            spin.wait()


def report(path: Path) -> str:
    """The full text report, for assertion messages."""
    return run_jaxprof("report", path, "--top", "5").stdout


def findings(path: Path) -> list[dict[str, Any]]:
    """The findings on the step time. The generated layouts carry no HloProto, which capture_health
    rightly names (tests/python/test_health.py); it is left out here."""
    return [f for f in jaxprof_json("findings", path)["findings"] if f["id"] != "capture_health"]


def slow_steps(found: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The slow_step findings by step number (from their evidence, "step N took ...")."""
    out = {}
    for f in found:
        if f["id"] == "slow_step":
            m = re.match(r"step (-?\d+) took ", f["evidence"])
            assert m, f
            assert f["title"].startswith(f"Step {m.group(1)} took "), f
            assert f["fix"].strip(), f
            out[int(m.group(1))] = f
    return out


def waited_ms(f: dict[str, Any]) -> float:
    """How long a slow step's evidence says the device waited on the host beyond the usual."""
    m = re.search(r"the device waited on the host \+([\d.]+) ms", f["evidence"])
    assert m, f
    return float(m.group(1))


capture = profile_steps  # plain jax.profiler, one StepTraceAnnotation a step


# ---- planted: a Flax NNX + Optax LM under `jaxprof run` ------------------------------------------


def test_planted_lm_under_jaxprof_run_names_the_slow_step_and_both_causes(tmp_path: Path, busy_machine):
    """tests/python/planted_lm.py: step 10 holds the 150 ms loader sleep and the helper's
    recompile; steps 11-13 hold neither."""
    proc = subprocess.run([str(JAXPROF_BIN), "run", "--out", str(tmp_path / "prof"), "--steps", "10:13", "--no-report",
                           "--", sys.executable, str(HERE / "planted_lm.py")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "planted step 10" in proc.stdout, proc.stdout
    run = Path(re.search(r"run directory: (\S+)", proc.stderr).group(1))
    text = report(run)
    found = findings(run)
    slow = slow_steps(found)
    assert set(slow) == {10}, text  # the planted step, and no other
    f = slow[10]
    assert f["severity"] == "bad", f
    assert waited_ms(f) >= 0.8 * SLEEP_S * 1000, f  # the sleep, less what the typical step waits anyway
    assert "outside any jitted call" in f["evidence"], f  # the sleep is not annotated
    assert re.search(r"compiling \+[\d.]+ ms \(.*jit_summarize", f["evidence"]), f
    assert "prefetch" in f["fix"] and "static arguments" in f["fix"], f
    recompile = next((x for x in found if x["id"] == "recompilation"), None)
    assert recompile is not None, text  # the helper's compile in the first captured step counts
    assert "in step 10," in recompile["evidence"], recompile
    steady = {c["module"]: c for c in jaxprof_json("compiles", run)["compiles"] if c["steady_state"]}
    assert steady["jit_summarize"]["step"] == 10, steady
    outliers = next(line for line in text.splitlines() if line.strip().startswith("outliers"))
    assert re.search(r"step 10 \([^)]*: idle \+", outliers), outliers  # the sleep: the larger part
    # the compile is named beside it when its excess over the typical step's is at least a fifth of
    # the step's excess (the report's rule): how long the helper's compile takes varies by machine
    steps = [s for s in jaxprof_json("steps", run)["steps"] if not s["no_device_work"]]
    med = lambda key: statistics.median(s[key] for s in steps)  # noqa: E731
    s10 = next(s for s in steps if s["step"] == 10)
    compile_excess = s10["compile_ms"] - med("compile_ms")
    named = compile_excess > 0 and compile_excess >= 0.2 * (s10["duration_ms"] - med("duration_ms"))
    assert ("compile +" in outliers) == named, (outliers, compile_excess)


# ---- planted: an MLP under plain jax.profiler ----------------------------------------------------


def layer_norm(h: jax.Array) -> jax.Array:
    m = h.mean(-1, keepdims=True)
    return (h - m) * jax.lax.rsqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def mlp_forward(ws: list[jax.Array], x: jax.Array) -> jax.Array:
    """Four similar matmuls with layer norm: no op dominates."""
    for w in ws:
        x = jnp.tanh(layer_norm(x @ w))
    return x


def mlp_weights(n: int = 1024) -> tuple[list[jax.Array], jax.Array]:
    """Weights and input of an MLP whose step takes ~100 ms or more on 2 busy cores: the OS's delay
    in waking the Python thread after the device finishes (up to ~15 ms a step at load 8 on 2
    cores, every step) stays a small share of it (see the report's "not done" on this)."""
    keys = jax.random.split(jax.random.PRNGKey(0), 5)
    return [jax.random.normal(k, (n, n)) / np.sqrt(n) for k in keys[:4]], jax.random.normal(keys[4], (n, n))


def test_planted_mlp_slow_annotated_loader_and_recompile_are_two_slow_steps(tmp_path: Path, busy_machine):
    """Step 3 loads its batch for 500 ms inside TraceAnnotation('load_batch'); step 6 calls a
    helper with a new shape (a recompile). Every other step is a plain jitted step (~100-350 ms
    here, so the sleep is longer than the LM's to stand out as much)."""
    sleep_s = 0.5
    forward = jax.jit(mlp_forward)

    @jax.jit
    def helper(v: jax.Array) -> jax.Array:
        for k in range(160):  # unrolled: a compile that takes a while (well past the steps' noise)
            v = jnp.sin(v * (1.0 + k / 100.0)) + jnp.cos(v)
        return v.sum()

    ws, x0 = mlp_weights()
    state = {"x": x0}
    values = {n: jnp.ones(n) for n in (16, 17)}  # on the device before the capture
    forward(ws, state["x"]).block_until_ready()
    helper(values[16]).block_until_ready()

    def step(i: int) -> None:
        with jax.profiler.TraceAnnotation("load_batch"):
            if i == 3:
                time.sleep(sleep_s)
        state["x"] = forward(ws, state["x"])
        helper(values[17 if i == 6 else 16]).block_until_ready()
        state["x"].block_until_ready()

    out = capture(tmp_path, step, steps=10)
    found = findings(out)
    slow = slow_steps(found)
    assert set(slow) == {3, 6}, report(out)
    assert "annotation 'load_batch'" in slow[3]["evidence"] and "'load_batch'" in slow[3]["fix"], slow[3]
    assert waited_ms(slow[3]) >= 0.8 * sleep_s * 1000, slow[3]
    assert "compiling +" not in slow[3]["evidence"], slow[3]
    assert re.search(r"compiling \+[\d.]+ ms \(.*1 XLA compile .*jit_helper", slow[6]["evidence"]), slow[6]
    assert "the device waited" not in slow[6]["evidence"] or waited_ms(slow[6]) < 0.5 * sleep_s * 1000, slow[6]
    # The typical steps are healthy: no loop-wide finding, and the recompile is named.
    assert {f["id"] for f in found} == {"slow_step", "recompilation"}, report(out)


# ---- false alarms: healthy programs, captured repeatedly on a busy machine ------------------------


def healthy_mlp() -> Callable[[int], None]:
    """The issue's program: a jitted MLP step on device-resident data."""
    forward = jax.jit(mlp_forward)
    ws, x0 = mlp_weights()
    state = {"x": x0}
    forward(ws, state["x"]).block_until_ready()

    def step(i: int) -> None:
        state["x"] = forward(ws, state["x"])
        state["x"].block_until_ready()
    return step


def healthy_training() -> Callable[[int], None]:
    """A jitted training step (loss, gradients, Adam written out) on device-resident data."""
    ws, x = mlp_weights(768)
    y = jnp.roll(x, 1, axis=0)

    def loss(ws: list[jax.Array]) -> jax.Array:
        return ((mlp_forward(ws, x) - y) ** 2).mean()

    @jax.jit
    def train_step(ws: list[jax.Array], m: list[jax.Array], v: list[jax.Array], t: jax.Array) -> Any:
        g = jax.grad(loss)(ws)
        m = [0.9 * a + 0.1 * b for a, b in zip(m, g)]
        v = [0.999 * a + 0.001 * b * b for a, b in zip(v, g)]
        ws = [w - 1e-3 * a / (jnp.sqrt(b) + 1e-8) for w, a, b in zip(ws, m, v)]
        return ws, m, v, t + 1

    state = [ws, [jnp.zeros_like(w) for w in ws], [jnp.zeros_like(w) for w in ws], jnp.zeros(())]
    jax.block_until_ready(train_step(*state))

    def step(i: int) -> None:
        state[:] = train_step(*state)
        jax.block_until_ready(state)
    return step


@pytest.mark.parametrize("program", [healthy_mlp, healthy_training], ids=["mlp", "training"])
def test_healthy_programs_get_no_finding_in_repeated_captures_under_load(tmp_path: Path, busy_machine, program):
    step = program()
    for k in range(3):
        out = capture(tmp_path / f"capture{k}", step, steps=5)
        assert findings(out) == [], f"capture {k}:\n{report(out)}"


def test_warm_up_compile_in_the_first_step_is_no_finding(tmp_path: Path, busy_machine):
    """Captured from the program's first call: step 0 compiles the step function itself."""
    def first_forward(ws: list[jax.Array], x: jax.Array) -> jax.Array:  # a function jitted nowhere else
        return mlp_forward(ws, x)

    forward = jax.jit(first_forward)
    ws, x0 = mlp_weights()
    state = {"x": x0}

    def step(i: int) -> None:
        state["x"] = forward(ws, state["x"])
        state["x"].block_until_ready()

    out = capture(tmp_path, step, steps=5)
    compiles = jaxprof_json("compiles", out)["compiles"]
    assert [c["step"] for c in compiles if c["module"] == "jit_first_forward"] == [0], compiles
    assert not any(c["steady_state"] for c in compiles), compiles
    assert findings(out) == [], report(out)


# ---- known answers on synthetic profiles ----------------------------------------------------------


def steps_space(steps: list[tuple[float, float, float]]) -> XSpace:
    """A GPU profile of marked steps laid end to end, each (length, kernel, copy) in ms: the step
    marker spans its length; kernels (dot.1 then fusion.2, half the kernel time each) run from
    0.5 ms into the step, then the host-to-device copy (if any). The rest of the step is idle,
    with nothing recorded."""
    space = XSpace(hostnames=["gpu-host"])
    py = space.plane("/host:CPU").line("python3", id=1)
    gpu = space.plane("/device:GPU:0")
    compute, h2d = gpu.line("Stream #13(Compute)", id=13), gpu.line("Stream #14(MemcpyH2D)", id=14)
    t, corr = 0.0, 0
    for num, (length, kernel, copy) in enumerate(steps):
        us = 1000
        py.span("train", t * us, (t + length) * us, {"_r": 1, "step_num": num})
        k0 = t + 0.5
        for op, start in (("dot.1", k0), ("fusion.2", k0 + kernel / 2)):  # half each: neither dominates
            corr += 1
            compute.span(f"{op}_kernel", start * us, (start + kernel / 2) * us,
                         {"hlo_op": op, "hlo_module": "jit_train_step", "correlation_id": Uint(corr)})
        if copy:
            corr += 1
            h2d.span("MemcpyH2D", (k0 + kernel) * us, (k0 + kernel + copy) * us,
                     {"memcpy_details": "kind_src:host kind_dst:device size:1048576 dest:0 async:1",
                      "correlation_id": Uint(corr)})
        t += length
    return space


def write(tmp_path: Path, steps: list[tuple[float, float, float]], name: str = "gpu-host") -> Path:
    return steps_space(steps).write(tmp_path / f"{name}.xplane.pb")


def test_slow_step_held_up_by_a_copy_known_answer(tmp_path: Path):
    """Steps of 10 ms with 9 ms of compute; step 2 adds a 30 ms copy no compute hides."""
    path = write(tmp_path, [(10, 9, 0), (10, 9, 0), (40, 9, 30), (10, 9, 0), (10, 9, 0)])
    found = findings(path)
    assert [f["id"] for f in found] == ["slow_step"], report(path)  # no loop-wide finding for one copy
    (f,) = found
    assert f["severity"] == "bad" and f["title"] == "Step 2 took 4.0x the median step time", f
    # median step 10 ms, the others all 10 ms; +30 ms is 37.5% of the 80 ms of steps; the bound is
    # the 10 ms floor (half the median is 5 ms, the steps' spread is 0)
    assert f["evidence"] == (
        "step 2 took 40.0 ms, 4.0x the median step (10.0 ms; the others 10.0-10.0 ms): +30.0 ms, 38% of all "
        "step time, past the noise bound of 10.0 ms. Where the excess went: copies not hidden by compute "
        "+30.0 ms (1 in this step)"), f
    assert "jax.device_put" in f["fix"], f
    outliers = next(line for line in report(path).splitlines() if line.strip().startswith("outliers"))
    assert outliers.split() == ["outliers", "step", "2", "(40.00", "ms:", "h2d", "+30.00", "ms)"], outliers


@pytest.mark.parametrize("idle_ms, fires", [(6, False), (12, True)])
def test_slow_step_needs_10_ms_over_the_usual_host_jitter(tmp_path: Path, idle_ms: float, fires: bool):
    """Steps of 2 ms; step 3 waits idle_ms more with nothing recorded. 6 ms is the size of the OS
    leaving a thread waiting on a busy machine (and 4x the median step): no finding. 12 ms is not."""
    path = write(tmp_path, [(2, 1.5, 0)] * 3 + [(2 + idle_ms, 1.5, 0)] + [(2, 1.5, 0)])
    slow = slow_steps(findings(path))
    assert set(slow) == ({3} if fires else set()), report(path)
    if fires:
        assert waited_ms(slow[3]) == pytest.approx(idle_ms, abs=0.05), slow[3]
        assert "outside any jitted call" in slow[3]["evidence"], slow[3]
    steps = {s["step"]: s for s in jaxprof_json("steps", path)["steps"]}
    assert steps[3]["outlier"] is True  # the mark stays: the step is long, only not worth a finding


@pytest.mark.parametrize("last_ms, fires", [(150, False), (200, True)])
def test_slow_step_must_stand_out_from_the_steps_own_spread(tmp_path: Path, last_ms: float, fires: bool):
    """Steps of 40-100 ms that vary anyway (idle 20-80 ms; median 80 ms, median absolute deviation
    20 ms: 3 robust standard deviations are 1.4826 x 20 x 3 = 89 ms). A 150 ms step, 70 ms over the
    median, is within that spread: no finding; a 200 ms step, 120 ms over, stands out."""
    path = write(tmp_path, [(40, 20, 0), (60, 20, 0), (80, 20, 0), (100, 20, 0), (last_ms, 20, 0)])
    slow = slow_steps(findings(path))
    assert set(slow) == ({4} if fires else set()), report(path)
    if fires:
        assert "past the noise bound of 89.0 ms" in slow[4]["evidence"], slow[4]


def test_loop_wide_idle_must_hold_in_the_typical_step(tmp_path: Path):
    """One step of five mostly idle (30% busy): the capture as a whole is below 80% busy, but the
    median step waits 10%: no device_idle. Four of five at 60% busy: the median step waits 40%,
    with no spread: a device_idle warning."""
    one = write(tmp_path, [(10, 9, 0), (10, 3, 0), (10, 9, 0), (10, 9, 0), (10, 9, 0)], "one")
    kpis = {k["name"]: k for k in jaxprof_json("findings", one)["kpis"]}
    assert kpis["device utilization"]["value"] == pytest.approx(78.0, rel=1e-4)  # 39 of 50 ms
    assert findings(one) == [], report(one)
    four = write(tmp_path, [(10, 6, 0), (10, 6, 0), (10, 9, 0), (10, 6, 0), (10, 6, 0)], "four")
    found = findings(four)
    assert [f["id"] for f in found] == ["device_idle"], report(four)
    assert found[0]["severity"] == "warning", found
    assert found[0]["evidence"].startswith(
        "device busy 66% of step time (warning below 80%); it waits 40% of the median step, 40% or more against "
        "the spread of 5 steps (robust standard deviation 0%); per step 0.00 ms host-only, 0.00 ms compiling, "
        "3.40 ms with nothing recorded"), found


def test_loop_wide_idle_must_hold_against_the_steps_spread(tmp_path: Path):
    """Waits that come and go as jitter does: 5, 60, 30, 45 and 20% of 10 ms steps. The capture is
    68% busy (a KPI warning) and the median step waits 30%, but the shares' robust standard
    deviation is 22% (1.4826 x 15%): 30% less three of those is nothing. No finding."""
    path = write(tmp_path, [(10, 9.5, 0), (10, 4, 0), (10, 7, 0), (10, 5.5, 0), (10, 8, 0)])
    kpis = {k["name"]: k for k in jaxprof_json("findings", path)["kpis"]}
    assert kpis["device utilization"]["value"] == pytest.approx(68.0, rel=1e-4)
    assert kpis["device utilization"]["rating"] == "warning"
    assert findings(path) == [], report(path)


# ---- a real capture -------------------------------------------------------------------------------


def test_tf_bert_capture_device_idle_30_percent_is_a_warning():
    """TF BERT on 8 V100s, worker 0: one step, 29.9% of it without device work (XProf: "potentially
    input-bound"). The device_idle warning starts where the KPI's "good" (80% busy) ends."""
    path = REAL_CAPTURES / "tf_bert_8xv100_worker0.xplane.pb.gz"  # the folder's absence: conftest
    found = {f["id"]: f for f in findings(path)}
    assert "device_idle" in found, report(path)
    f = found["device_idle"]
    assert f["severity"] == "warning", f
    assert f["evidence"].startswith("device busy 70% of step time (warning below 80%); it waits 30% of the median "
                                    "step, 30% or more against the spread of 1 step"), f
    assert "6.36 ms with nothing recorded" in f["evidence"], f
    # two of the eight GPUs ran ops: "busy" above is either's; the KPI is each one's own share
    (util,) = [k["value"] for k in jaxprof_json("report", path)["kpis"] if k["name"] == "device utilization"]
    assert (f'"device busy" counts an instant when any of the 2 devices works; each is busy {util:.0f}% '
            "of the step time on average") in f["evidence"], f
