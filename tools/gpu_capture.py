"""Capture real JAX profiles on an NVIDIA GPU for tests/data/gpu/.

Run on a machine with JAX and CUDA (`python3 tools/gpu_capture.py OUTDIR`).
Each capture runs in its own process, because XLA_FLAGS (command buffers on
or off) must be set before JAX starts. Besides each run's `.xplane.pb` it
writes `OUTDIR/meta.json`: versions, the device, XLA's own cost analysis of
each program, and per-step wall times timed around a blocking step, so the
profile's numbers can be held against truth that does not come from it.

Captures (MODES below):
  transformer        a GPT-style train step (scopes, step markers, a slow
                     loader, H2D batches, D2H loss); XLA's default command
                     buffers (CUDA graphs)
  transformer_nocb   the same with command buffers off
  transfers          large pageable and pinned-host H2D/D2H copies between
                     compute, so copies run on their own streams
  compile            a small model whose eval step compiles inside the trace
                     (autotuning kernels, the compiler's host events)
  transformer_graphtrace  command buffers on, CUPTI told to record each CUDA
                     graph as one activity (crashed JAX 0.11.2 twice)
  scan_cb, scan_nocb the transformer with its layers stacked and scanned (a
                     while loop), command buffers on and off
CAPTURE_MODES=a,b picks some.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

SIZES = {  # vocab, width, heads, layers, seq, batch
    "gpu": dict(V=16384, D=1024, H=16, L=6, T=512, B=16),
    "small": dict(V=4096, D=256, H=4, L=2, T=128, B=8),
    "cpu": dict(V=512, D=64, H=4, L=2, T=32, B=4),  # a quick check off-GPU
}
# name: XLA_FLAGS, the profiler's advanced_configuration, model size, traced steps, eval compiled
# inside the trace at the second-to-last step
MODES = {
    "transformer": ("", {}, "gpu", 4, False),
    "transformer_nocb": ("--xla_gpu_enable_command_buffer=", {}, "gpu", 4, False),
    "transfers": ("", {}, "gpu", 4, False),
    "compile": ("", {}, "small", 3, True),
    "transformer_graphtrace": ("", {"gpu_enable_cupti_activity_graph_trace": True}, "small", 3, False),
    "scan_cb": ("", {}, "gpu", 4, False),
    "scan_nocb": ("--xla_gpu_enable_command_buffer=", {}, "gpu", 4, False),
}


def init_params(key: Any, V: int, D: int, H: int, L: int, T: int, B: int) -> dict:
    import jax
    import jax.numpy as jnp

    keys = iter(jax.random.split(key, 4 + 6 * L))

    def dense(n_in: int, n_out: int) -> Any:
        return jax.random.normal(next(keys), (n_in, n_out), jnp.float32) * n_in**-0.5

    layers = []
    for _ in range(L):
        layers.append({
            "ln1": jnp.ones((D,)), "ln2": jnp.ones((D,)),
            "wq": dense(D, D), "wk": dense(D, D), "wv": dense(D, D), "wo": dense(D, D),
            "w1": dense(D, 4 * D), "b1": jnp.zeros((4 * D,)),
            "w2": dense(4 * D, D), "b2": jnp.zeros((D,)),
        })
    return {"embed": dense(V, D), "pos": dense(T, D), "lnf": jnp.ones((D,)), "layers": layers}


def forward(params: dict, tokens: Any, H: int) -> Any:
    import jax
    import jax.numpy as jnp

    bf = jnp.bfloat16

    def norm(x: Any, g: Any) -> Any:
        x32 = x.astype(jnp.float32)
        x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, -1, keepdims=True) + 1e-6)
        return (x32 * g).astype(bf)

    B, T = tokens.shape
    with jax.named_scope("embed"):
        x = (params["embed"][tokens] + params["pos"][:T]).astype(bf)
    mask = jnp.tril(jnp.ones((T, T), bool))

    def block(x: Any, p: dict) -> Any:
        with jax.named_scope("attention"):
            h = norm(x, p["ln1"])
            D = h.shape[-1]
            q, k, v = (jnp.einsum("btd,de->bte", h, p[w].astype(bf)).reshape(B, T, H, D // H)
                       for w in ("wq", "wk", "wv"))
            s = jnp.einsum("bthd,bshd->bhts", q, k) * (D // H) ** -0.5
            s = jnp.where(mask, s.astype(jnp.float32), -1e9)
            a = jax.nn.softmax(s, -1).astype(bf)
            o = jnp.einsum("bhts,bshd->bthd", a, v).reshape(B, T, D)
            x = x + jnp.einsum("btd,de->bte", o, p["wo"].astype(bf))
        with jax.named_scope("mlp"):
            h = norm(x, p["ln2"])
            h = jax.nn.gelu(jnp.einsum("btd,df->btf", h, p["w1"].astype(bf)) + p["b1"].astype(bf))
            return x + jnp.einsum("btf,fd->btd", h, p["w2"].astype(bf)) + p["b2"].astype(bf)

    if isinstance(params["layers"], dict):  # stacked: one scanned block (a while loop in the HLO)
        with jax.named_scope("blocks"):
            x, _ = jax.lax.scan(lambda x, p: (block(x, p), None), x, params["layers"])
    else:
        for i, p in enumerate(params["layers"]):
            with jax.named_scope(f"block{i}"):
                x = block(x, p)
    with jax.named_scope("head"):
        return jnp.einsum("btd,vd->btv", norm(x, params["lnf"]), params["embed"].astype(bf))


def start_trace(out: Path) -> None:
    import jax

    options = jax.profiler.ProfileOptions()
    advanced = json.loads(os.environ.get("CAPTURE_ADVANCED", "{}"))
    if advanced:
        options.advanced_configuration = advanced
    jax.profiler.start_trace(str(out), profiler_options=options)


def traced_steps(out: Path, name: str, steps: int, walls: list) -> Iterator[int]:
    """Each step number, yielded inside its StepTraceAnnotation with the trace running; each step's
    wall time (ms) is appended to walls."""
    import jax

    start_trace(out)
    try:
        for i in range(steps):
            t0 = time.perf_counter()
            with jax.profiler.StepTraceAnnotation(name, step_num=i):
                yield i
            walls.append((time.perf_counter() - t0) * 1e3)
    finally:
        jax.profiler.stop_trace()


def run_transformer(out: Path, size: dict, steps: int, with_eval: bool, scan: bool = False) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    H = size["H"]
    params = init_params(jax.random.key(0), **size)
    if scan:
        params["layers"] = jax.tree.map(lambda *a: jnp.stack(a), *params["layers"])
    opt = optax.adamw(3e-4)
    opt_state = opt.init(params)

    def loss_fn(p: dict, tokens: Any) -> Any:
        logits = forward(p, tokens[:, :-1], H).astype(jnp.float32)
        with jax.named_scope("loss"):
            return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

    @jax.jit
    def train_step(p: dict, s: Any, tokens: Any) -> tuple:
        loss, grads = jax.value_and_grad(loss_fn)(p, tokens)
        with jax.named_scope("optimizer"):
            updates, s = opt.update(grads, s, p)
            p = optax.apply_updates(p, updates)
        return p, s, loss

    @jax.jit
    def eval_step(p: dict, tokens: Any) -> Any:
        return jax.nn.log_softmax(forward(p, tokens, H).astype(jnp.float32))[:, -1]

    rng = np.random.default_rng(0)
    shape = (size["B"], size["T"] + 1)

    def load_batch() -> Any:
        time.sleep(0.003)  # a slow loader the profile should show as host time
        return rng.integers(0, size["V"], shape, dtype=np.int32)

    tokens = jax.device_put(load_batch())
    compiled = train_step.lower(params, opt_state, tokens).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    for _ in range(3):  # warm up outside the trace
        params, opt_state, loss = train_step(params, opt_state, tokens)
    float(loss)

    walls: list[float] = []
    for i in traced_steps(out, "train", steps, walls):
        with jax.profiler.TraceAnnotation("data_load"):
            tokens = jax.device_put(load_batch())
        params, opt_state, loss = train_step(params, opt_state, tokens)
        with jax.profiler.TraceAnnotation("log_loss"):
            loss_value = float(loss)
        if with_eval and i == steps - 2:
            with jax.profiler.TraceAnnotation("eval"):  # compiled inside the trace
                logp = np.asarray(eval_step(params, tokens[:, :-1]))
    return {
        "size": size, "steps": steps, "step_wall_ms": walls, "loss": loss_value,
        "eval_out_shape": list(logp.shape) if with_eval else None,
        "train_step_cost": {k: float(v) for k, v in (cost or {}).items()
                            if k in ("flops", "bytes accessed", "transcendentals")},
        "param_arrays": len(jax.tree_util.tree_leaves((params, opt_state))),
    }


def run_transfers(out: Path, mb: int, steps: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    n = mb * (1 << 20) // 4
    host = np.arange(n, dtype=np.float32)
    dev = jax.devices()[0]

    @jax.jit
    def work(x: Any) -> Any:
        with jax.named_scope("scale_and_sum"):
            return x * 2.0 + jnp.sin(x)

    pinned = None
    try:
        pinned = jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host")
        jax.device_put(host[:8], pinned).block_until_ready()
    except Exception as e:  # not every backend has memory kinds
        print("no pinned_host memory:", e)
        pinned = None
    on_device = jax.sharding.SingleDeviceSharding(dev, memory_kind="device")
    x = jax.device_put(host, dev)
    work(x).block_until_ready()
    walls: list[float] = []
    for _ in traced_steps(out, "xfer", steps, walls):
        with jax.profiler.TraceAnnotation("h2d_pageable"):
            x = jax.device_put(host, dev)
        y = work(x)
        z = work(y)  # queued behind y: compute overlaps the next copy
        with jax.profiler.TraceAnnotation("d2h_pageable"):
            back = np.asarray(y)
        if pinned is not None:
            try:
                with jax.profiler.TraceAnnotation("d2h_pinned"):
                    parked = jax.device_put(z, pinned).block_until_ready()
                with jax.profiler.TraceAnnotation("h2d_from_pinned"):
                    jax.device_put(parked, on_device).block_until_ready()
            except Exception as e:
                print("pinned copies failed:", e)
                pinned = None
        z.block_until_ready()
    return {"mb": mb, "steps": steps, "step_wall_ms": walls, "checksum": float(back[:8].sum()),
            "pinned_host": pinned is not None}


def child(mode: str, out: Path, size_name: str) -> None:
    import jax

    _, _, model, steps, with_eval = MODES[mode]
    if size_name == "cpu":
        model = "cpu"
    defaults = jax.profiler.ProfileOptions()
    info: dict[str, Any] = {
        "mode": mode, "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "advanced_configuration": json.loads(os.environ.get("CAPTURE_ADVANCED", "{}")),
        "jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
        "device_kind": jax.devices()[0].device_kind,
        "profile_options": {k: getattr(defaults, k) for k in ("host_tracer_level", "python_tracer_level")},
    }
    t0 = time.time()
    if mode == "transfers":
        info.update(run_transfers(out, mb=256 if size_name == "gpu" else 8, steps=steps))
    else:
        info.update(run_transformer(out, SIZES[model], steps, with_eval, scan=mode.startswith("scan")))
    info["seconds"] = time.time() - t0
    (out / "meta.json").write_text(json.dumps(info, indent=1))


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]), sys.argv[4])
        return 0
    out = Path(sys.argv[1])
    size_name = sys.argv[2] if len(sys.argv) > 2 else "gpu"  # "cpu": every model small
    deadline = time.time() + float(os.environ.get("CAPTURE_BUDGET_S", "330"))
    meta = {}
    chosen = os.environ.get("CAPTURE_MODES", "").split(",") if os.environ.get("CAPTURE_MODES") else list(MODES)
    for mode, (flags, advanced, *_) in ((m, MODES[m]) for m in chosen):
        left = deadline - time.time()
        if left < 30:
            print(f"skipping {mode}: {left:.0f} s left", flush=True)
            continue
        env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " " + flags).strip(),
                   XLA_PYTHON_CLIENT_PREALLOCATE="false", CAPTURE_ADVANCED=json.dumps(advanced))
        run_dir = out / mode
        run_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        try:
            proc = subprocess.run([sys.executable, "-X", "faulthandler", __file__, "--child", mode, str(run_dir), size_name],
                                  env=env, timeout=left, capture_output=True, text=True)
            print(f"== {mode}: rc {proc.returncode} in {time.time() - t0:.1f} s", flush=True)
            print(proc.stdout[-3000:], proc.stderr[-6000:], sep="\n", flush=True)
        except subprocess.TimeoutExpired:
            print(f"== {mode}: timed out", flush=True)
        meta_file = run_dir / "meta.json"
        if meta_file.exists():
            meta[mode] = json.loads(meta_file.read_text())
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    print(json.dumps(meta, indent=1)[:4000])
    return 0 if meta else 1


if __name__ == "__main__":
    sys.exit(main())
