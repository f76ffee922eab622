"""A real capture of a realistic model for the speed and memory benchmarks (issue 34, goals 1-3).

    python benchmarks/real_capture.py [--steps N] [--force]     # prints the .xplane.pb's path

What it runs: the Flax NNX + Optax transformer language model of tests/python/realistic_models.py
(transformer_lm: vocab 512, d_model 64, 4 heads, 6 pre-norm blocks, sequence 32, batch 4; AdamW
3e-4), its jitted train_step returning the whole new train state (parameters, both Adam moments,
step count) and three metrics, on one CPU device. The step is compiled and run 20 times outside
the capture; then jaxprof.Profiler captures --steps consecutive steps (default 150), each in
`prof.step(i)` (a StepTraceAnnotation) and ended by jax.block_until_ready on the metrics, with the
Python tracer on (python_tracer_level=1), host_tracer_level=2 (every XLA CPU thunk a host event),
the device tracer on and HloProtos kept (jaxprof.Profiler's defaults otherwise). Each step is
short (12-23 ms with the tracers on: about 1,200 thunks of small matmuls and fusions, 3,700
Python-tracer frames and 2,100 runtime and other events), so the file is host-heavy: about 7,000
events per step, 34 bytes per event.

The capture runs in a child Python (JAX_PLATFORMS=cpu, set before jax is imported) so that JAX's
memory and threads stay out of the caller, and is cached: build/bench-captures/lm-<steps>.xplane.pb
(uncompressed; build/ is git-ignored), written again only with --force or when missing. With the
default 150 steps the file is 36 MB (1.06 M events) and the whole capture, JAX's import and
compilation included, takes 14-20 s of wall time on the 2-core benchmark machine (the child prints
its own times to stderr). It is one capture of N steps:
more steps, never concatenated files.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = ROOT / "build" / "bench-captures"
WARMUP_STEPS = 20


def capture(steps: int, out_dir: Path) -> Path:
    """In this process: the capture itself (JAX imported here). Returns the run directory."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    import jaxprof
    from realistic_models import LM, transformer_lm

    model = transformer_lm(LM["vocab"], LM["d_model"], LM["heads"], LM["layers"], LM["seq"])
    graphdef, params = nnx.split(model, nnx.Param)
    tx = optax.adamw(3e-4)
    state = {"params": params, "opt": tx.init(params), "step": jnp.zeros((), jnp.int32)}

    def loss_fn(p, tokens):
        logits = nnx.merge(graphdef, p)(tokens[:, :-1])
        labels = tokens[:, 1:]
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
        return loss, (logits.argmax(-1) == labels).mean()

    @jax.jit
    def train_step(state, tokens):
        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(state["params"], tokens)
        updates, opt = tx.update(grads, state["opt"], state["params"])
        new = {"params": optax.apply_updates(state["params"], updates), "opt": opt, "step": state["step"] + 1}
        return new, {"loss": loss, "accuracy": acc, "grad_norm": optax.global_norm(grads)}

    tokens = jax.random.randint(jax.random.PRNGKey(1), (LM["batch"], LM["seq"] + 1), 0, LM["vocab"])
    t0 = time.perf_counter()
    for _ in range(WARMUP_STEPS):  # compile and settle outside the capture
        state, metrics = train_step(state, tokens)
    jax.block_until_ready(metrics)
    t1 = time.perf_counter()
    prof = jaxprof.Profiler(out_dir, start_step=WARMUP_STEPS, num_steps=steps, python_trace=True,
                            host_trace_level=2, report=False)
    for step in range(WARMUP_STEPS, WARMUP_STEPS + steps):
        with prof.step(step):
            state, metrics = train_step(state, tokens)
            jax.block_until_ready(metrics)
    t2 = time.perf_counter()
    print(f"compile+warm-up {t1 - t0:.1f} s, {steps} captured steps (with the write) {t2 - t1:.1f} s, "
          f"final step count {int(state['step'])}", file=sys.stderr)
    return Path(prof.captures[0].run_dir)


def cached(steps: int, force: bool = False, cache: Path = CACHE) -> Path:
    """The cached capture of `steps` steps, made (in a child Python) when missing or forced."""
    dest = cache / f"lm-{steps}.xplane.pb"
    if dest.exists() and not force:
        return dest
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="real-capture-", dir=cache) as tmp:
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        env.pop("XLA_FLAGS", None)  # one CPU device, whatever the caller's flags
        t = time.perf_counter()
        p = subprocess.run([sys.executable, __file__, "--child", tmp, "--steps", str(steps)], env=env,
                           stdout=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"real_capture.py: the capture failed (exit {p.returncode})")
        run_dir = Path(p.stdout.strip().splitlines()[-1])
        files = sorted(run_dir.glob("*.xplane.pb"))
        if len(files) != 1:
            sys.exit(f"real_capture.py: expected one .xplane.pb in {run_dir}, found {[f.name for f in files]}")
        shutil.move(str(files[0]), dest.with_suffix(".tmp"))
        os.replace(dest.with_suffix(".tmp"), dest)
        print(f"real_capture.py: {dest} ({dest.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t:.0f} s",
              file=sys.stderr)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--force", action="store_true", help="capture again even when cached")
    ap.add_argument("--child", metavar="DIR", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(capture(a.steps, Path(a.child)))
        return 0
    print(cached(a.steps, a.force))
    return 0


if __name__ == "__main__":
    sys.exit(main())
