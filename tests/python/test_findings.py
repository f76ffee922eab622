"""Findings on real JAX (CPU) workloads: each workload is built to show one problem and must get the
matching finding, with evidence naming the right thing and a fix; a healthy jitted loop gets none.

Every workload runs STEPS steps under StepTraceAnnotation, compiled and warmed up outside the
capture except where compilation is the problem. Sizes keep wide margins against the rules'
thresholds (see src/analyses/findings.c), and a failing assertion prints the whole report.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from conftest import jaxprof_json, profile_steps, run_jaxprof

STEPS = 10


def capture(log_dir: Path, step: Callable[[int], Any], steps: int = STEPS) -> Path:
    return profile_steps(log_dir, step, steps)


def report(log_dir: Path) -> str:
    """The full text report: what the assertion messages show when a rule does not do its job."""
    return run_jaxprof("report", log_dir, "--top", "8").stdout


def finding(log_dir: Path, fid: str) -> dict[str, Any]:
    """The finding `fid`, asserting it is there with evidence and a fix."""
    found = {f["id"]: f for f in jaxprof_json("findings", log_dir)["findings"]}
    assert fid in found, f"no {fid} finding:\n{report(log_dir)}"
    f = found[fid]
    assert f["evidence"].strip() and f["fix"].strip(), f
    assert any(ch.isdigit() for ch in f["evidence"]), f  # evidence carries numbers
    return f


def test_many_tiny_unjitted_ops(tmp_path: Path):
    x = jnp.ones((8, 8))

    def step(i: int) -> None:
        y = x
        for _ in range(100):  # 200 eager jnp ops, each its own dispatch of a tiny executable
            y = y * 1.001 + 0.5
        y.block_until_ready()

    step(0)  # compiles the eager multiply/add executables outside the capture
    f = finding(capture(tmp_path, step), "many_small_ops")
    assert "PjitFunction(multiply)" in f["evidence"] and "PjitFunction(add)" in f["evidence"], f
    per_step = float(f["evidence"].split(" jitted dispatches per step")[0])
    assert per_step >= 190, f  # 200 dispatches per step; the rule needs 20


def unaligned_batch(shape: tuple[int, ...], value: float) -> np.ndarray:
    """A float32 host array at an address that is not 64-byte aligned. XLA:CPU aliases aligned
    host buffers instead of copying them; this one it must copy, as every accelerator would."""
    n = int(np.prod(shape))
    raw = np.empty(n * 4 + 64, np.uint8)
    off = ((16 - raw.ctypes.data) % 64) or 16
    a = raw[off:off + n * 4].view(np.float32).reshape(shape)
    a.fill(value)
    return a


def test_large_host_to_device_copy_every_step(tmp_path: Path):
    @jax.jit
    def head(a: jax.Array) -> jax.Array:
        return a[0, :8] * 2.0

    batches = [unaligned_batch((4096, 4096), v) for v in (1.0, 2.0)]  # 64 MiB each, on the host
    head(jax.device_put(batches[0])).block_until_ready()

    def step(i: int) -> None:
        head(jax.device_put(batches[i % 2])).block_until_ready()  # a 64 MiB H2D copy per step

    out = capture(tmp_path, step)
    transfers = {t["kind"]: t for t in jaxprof_json("transfers", out)["transfers"]}
    # XLA:CPU records a copy as "H2D Dispatch" on a PjRt worker thread; now and then one runs
    # without that event, so do not demand all of them.
    assert transfers["H2D"]["count"] >= STEPS // 2, transfers
    f = finding(out, "large_transfers")
    assert "H2D" in f["evidence"], f
    share = float(f["evidence"].split("% of step time")[0].rsplit(" ", 1)[-1])
    assert share >= 20, f  # the rule needs 10%


def test_shapes_change_every_step(tmp_path: Path):
    @jax.jit
    def normalize(a: jax.Array) -> jax.Array:
        return jnp.tanh(a * 2.0).sum()

    normalize(np.ones(100, np.float32)).block_until_ready()

    def step(i: int) -> None:
        normalize(np.ones(100 + i, np.float32)).block_until_ready()  # a new length: a new compile

    out = capture(tmp_path, step, steps=8)
    f = finding(out, "recompilation")
    assert f["severity"] == "bad", f
    assert "jit_normalize compiled 7 times" in f["evidence"], f
    assert "steps 1-7" in f["evidence"], f


def test_one_dominating_matmul(tmp_path: Path):
    @jax.jit
    def f(a: jax.Array, b: jax.Array, c: jax.Array) -> jax.Array:
        return (a @ b).sum() + jnp.tanh(c * 2.0).sum()

    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    a, b = jax.random.normal(k1, (1536, 1536)), jax.random.normal(k2, (1536, 1536))
    c = jnp.ones((256,))
    f(a, b, c).block_until_ready()
    out = capture(tmp_path, lambda i: f(a, b, c).block_until_ready(), steps=8)
    top = max(jaxprof_json("ops", out)["ops"], key=lambda op: op["self_ms"])
    assert "matmul" in top["category"] or "dot" in top["op_name"], top
    found = finding(out, "dominant_op")
    assert found["evidence"].startswith(top["name"] + " "), (found, top)
    assert "matmul" in found["fix"], found


def test_sleep_in_input_pipeline(tmp_path: Path):
    step_fn = jax.jit(lambda a: jnp.tanh(a @ a))
    a = jnp.ones((64, 64))
    step_fn(a).block_until_ready()

    def step(i: int) -> None:
        with jax.profiler.TraceAnnotation("data"):
            time.sleep(0.02)  # a slow input pipeline: the device waits
        step_fn(a).block_until_ready()

    f = finding(capture(tmp_path, step), "device_idle")
    assert "annotation 'data'" in f["evidence"], f
    assert "'data'" in f["fix"], f
    busy = float(f["evidence"].split("device busy ")[1].split("%")[0])
    assert busy < 25, f  # the rule needs < 50%


def test_healthy_jitted_loop_has_no_findings(tmp_path: Path):
    # A 4-layer MLP with layer norm: several similar-size matmuls, data on the device, compiled
    # outside the capture, no sleeps; each step blocks on its result.
    def layer_norm(h: jax.Array) -> jax.Array:
        m = h.mean(-1, keepdims=True)
        return (h - m) * jax.lax.rsqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5)

    @jax.jit
    def forward(ws: list[jax.Array], x: jax.Array) -> jax.Array:
        for w in ws:
            x = jnp.tanh(layer_norm(x @ w))
        return x

    keys = jax.random.split(jax.random.PRNGKey(0), 5)
    ws = [jax.random.normal(k, (768, 768)) / np.sqrt(768) for k in keys[:4]]
    state = {"x": jax.random.normal(keys[4], (768, 768))}
    forward(ws, state["x"]).block_until_ready()

    def step(i: int) -> None:
        state["x"] = forward(ws, state["x"])
        state["x"].block_until_ready()

    out = capture(tmp_path, step)
    doc = jaxprof_json("findings", out)
    assert doc["findings"] == [], report(out)
    kpis = {k["name"]: k for k in doc["kpis"]}
    assert kpis["device utilization"]["rating"] == "good", kpis


def test_recompilation_names_the_costliest_module(tmp_path: Path):
    """A cheap function recompiled at every step and one big function compiled once: the finding
    names the module whose compiles took the most time, not the one compiled most often."""
    @jax.jit
    def small(a: jax.Array) -> jax.Array:
        return (a * 2.0).sum()

    @jax.jit
    def big(a: jax.Array) -> jax.Array:
        for k in range(300):  # unrolled: hundreds of HLO ops make one slow compile
            a = jnp.tanh(a * (1.0 + k / 1000.0)) + jnp.sin(a)
        return a.sum()

    small(np.ones(10, np.float32)).block_until_ready()

    def step(i: int) -> None:
        small(np.ones(10 + i, np.float32)).block_until_ready()  # a new length: a new compile
        if i == 2:
            big(jnp.ones(64)).block_until_ready()

    out = capture(tmp_path, step, steps=5)
    compiles = jaxprof_json("compiles", out)["compiles"]
    cost: dict[str, float] = {}
    for c in compiles:
        if c["steady_state"]:
            cost[c["module"]] = cost.get(c["module"], 0.0) + c["duration_ms"]
    assert cost["jit_big"] > cost["jit_small"], cost  # the workload does what it is meant to
    f = finding(out, "recompilation")
    assert "jit_big compiled 1 time there" in f["evidence"], f
    assert f["severity"] == "bad", f  # jit_small compiled more than once: a true recompilation
