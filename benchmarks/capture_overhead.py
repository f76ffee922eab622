"""Capture overhead: what jaxprof's annotations and Profiler.step() cost a training loop.

Each row is the fastest of REPEATS runs of a timed loop of N calls (median and max beside it),
reported per call, next to the peers measured in the same run (the rows take turns): a bare call,
and jax.profiler.TraceAnnotation.
Writes a Markdown table to stdout; `make bench` puts it into docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from typing import Callable

import jax

import jaxprof

N = 20_000
REPEATS = 15


def per_call_ns(loops: list[Callable[[int], None]]) -> list[tuple[float, float, float]]:
    """(median, min, max) nanoseconds per iteration of each loop over REPEATS timed runs of N.

    The loops take turns within each repeat, so a burst of load from other processes on the
    machine falls on every row alike instead of on whichever row happened to run then.
    """
    n = N
    for loop in loops:
        loop(max(1, n // 10))  # warm caches and lazy imports
    samples: list[list[float]] = [[] for _ in loops]
    for _ in range(REPEATS):
        for loop, out in zip(loops, samples):
            t0 = time.perf_counter_ns()
            loop(n)
            out.append((time.perf_counter_ns() - t0) / n)
    return [(statistics.median(s), min(s), max(s)) for s in samples]


def work() -> int:
    return 1


def bare(n: int) -> None:
    for _ in range(n):
        work()


def with_jax_annotation(n: int) -> None:
    for _ in range(n):
        with jax.profiler.TraceAnnotation("work"):
            work()


def with_jaxprof_annotate(n: int) -> None:
    for _ in range(n):
        with jaxprof.annotate("work"):
            work()


annotated_work = jaxprof.annotate("work")(work)


def with_jaxprof_decorator(n: int) -> None:
    for _ in range(n):
        annotated_work()


def profiler_idle_steps(log_dir: str) -> Callable[[int], None]:
    prof = jaxprof.Profiler(log_dir, start_step=10**12)  # scheduled far away: never captures

    def loop(n: int) -> None:
        for i in range(n):
            with prof.step(i):
                work()

    return loop


def rows(traced: bool) -> list[tuple[str, tuple[float, float, float]]]:
    with tempfile.TemporaryDirectory() as d:
        named = [
            ("bare call", bare),
            ("jax.profiler.TraceAnnotation", with_jax_annotation),
            ("jaxprof.annotate (with)", with_jaxprof_annotate),
            ("jaxprof.annotate (decorator)", with_jaxprof_decorator),
        ]
        if not traced:
            named.append(("Profiler.step() idle", profiler_idle_steps(d)))
        return list(zip([name for name, _ in named], per_call_ns([loop for _, loop in named])))


def table(title: str, measured: list[tuple[str, tuple[float, float, float]]]) -> str:
    # Ranked by the fastest loop: other load on the machine (a fuzzing campaign, builds) only ever
    # adds time, in bursts that make per-loop times bimodal; the median and max show how much.
    base = dict(measured)["jax.profiler.TraceAnnotation"][1]
    bare_ns = dict(measured)["bare call"][1]
    lines = [f"### {title}", "",
             "| what | ns/call (min) | median | max | overhead vs bare | ratio vs TraceAnnotation |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, (med, lo, hi) in measured:
        lines.append(f"| {name} | {lo:.0f} | {med:.0f} | {hi:.0f} | {lo - bare_ns:+.0f} | {lo / base:.2f}× |")
    return "\n".join(lines)


def main() -> None:
    global N, REPEATS
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=N, help="calls per timed loop")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed loops per row")
    args = parser.parse_args()
    N, REPEATS = args.calls, args.repeats
    off = rows(traced=False)
    with tempfile.TemporaryDirectory() as d:
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 0  # JAX's default Python tracer would dominate every row
        jax.profiler.start_trace(d, profiler_options=options)
        on = rows(traced=True)
        jax.profiler.stop_trace()
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}, "
          f"Python {platform.python_version()}, JAX {jax.__version__}; {N} calls per loop, "
          f"fastest (median, max) of {REPEATS} loops. Command: `make bench`.\n")
    print(table("Tracing off", off))
    print()
    print(table("Tracing on", on))


if __name__ == "__main__":
    main()
