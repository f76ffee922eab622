"""Analysis speed: jaxprof's C engine against jax.profiler.ProfileData on the same capture.

Captures a real CPU profile (ten small jitted dispatches per step, the Python tracer on, so there
are many events),
then times, on that one file: (a) `jaxprof.load(path).ops()`: decode + model + every analysis +
JSON, and (b) the peer: reading the file with jax.profiler.ProfileData and summing op time per
(hlo_module, hlo_op) in Python, which is only the first of those tables. Medians of REPEATS runs.
Writes Markdown to stdout; `make bench` puts it into docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxprof  # noqa: E402


def capture(log_dir: Path, steps: int) -> Path:
    @jax.jit
    def step(w: jax.Array, x: jax.Array) -> jax.Array:
        return w - 1e-3 * jnp.tanh(x @ w)

    w, x = jnp.ones((128, 128)), jnp.ones((128, 128))
    step(w, x).block_until_ready()
    opts = jax.profiler.ProfileOptions()
    opts.python_tracer_level = 1
    jax.profiler.start_trace(str(log_dir), profiler_options=opts)
    for i in range(steps):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            for _ in range(10):  # ten dispatches per step: many small events, like a real loop
                with jax.profiler.TraceAnnotation("micro_batch"):
                    w = step(w, x)
        w.block_until_ready()
    jax.profiler.stop_trace()
    return next(log_dir.rglob("*.xplane.pb"))


def peer_ops(path: Path) -> dict[tuple[str, str], list[float]]:
    ops: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for plane in jax.profiler.ProfileData.from_file(str(path)).planes:
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                if "hlo_op" in stats:
                    op = ops[(str(stats.get("hlo_module")), str(stats["hlo_op"]))]
                    op[0] += 1
                    op[1] += event.duration_ns
    return ops


def median_s(fn, repeats: int) -> float:
    fn()  # warm the page cache and imports
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = capture(Path(tmp), args.steps)
        profile = jaxprof.load(path)
        events = profile.summary()["events"]
        assert len(profile.ops()) == len(peer_ops(path))  # both read the same ops
        ours = median_s(lambda: jaxprof.load(path).ops(), args.repeats)
        peer = median_s(lambda: peer_ops(path), args.repeats)
        size = path.stat().st_size
    print("\n## Analysis speed (`benchmarks/analysis_speed.py`)\n")
    print(f"One real CPU capture: {args.steps} steps of 10 dispatches, Python tracer on, {size / 1e6:.1f} MB, {events:,} events; "
          f"median of {args.repeats} runs. `jaxprof.load(path).ops()` runs the decoder, the model and every "
          "analysis and renders JSON; the peer reads the file with `jax.profiler.ProfileData` and sums op "
          "time per HLO op in Python (one table only).\n")
    print("| what | time | events/s | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| jaxprof (C): load + all analyses + JSON | {ours * 1e3:.1f} ms | {events / ours / 1e6:.1f} M | 1.0× |")
    print(f"| jax.profiler.ProfileData + Python op sums | {peer * 1e3:.1f} ms | {events / peer / 1e6:.1f} M | "
          f"{peer / ours:.1f}× slower |")
    print()


if __name__ == "__main__":
    main()
