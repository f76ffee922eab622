"""What `jaxprof run` costs the program it runs (issue 21).

A child script times a tiny jitted function (f32[8] + 1, so dispatch is all there is): REPEATS
timed loops of N calls after a warm-up, the median per-call time, and the time from interpreter
start to the end of `import jax`. It runs three ways, in turns, ROUNDS times:
  - bare: `python child.py`;
  - counting: `jaxprof run --steps 1000000000:1000000001 --no-report -- python child.py`, so the
    jax.jit wrapper counts every call and the capture never starts (the state before step A);
  - after capture: `jaxprof run --steps 0:1 --no-report -- python child.py`, one step captured
    during the warm-up, then the wrapper passes calls straight through.
Writes Markdown to stdout; `make bench` puts it into docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

JAXPROF = Path(sys.executable).parent / "jaxprof"

CHILD = """
import time
t0 = time.perf_counter()
import jax
import jax.numpy as jnp
import_s = time.perf_counter() - t0
import json, sys
n, repeats = int(sys.argv[1]), int(sys.argv[2])
f = jax.jit(lambda x: x + 1.0)
x = jnp.ones(8)
for _ in range(2000):  # warm-up: compile, and the one captured step of --steps 0:1
    f(x)
f(x).block_until_ready()
per_call = []
for _ in range(repeats):
    t = time.perf_counter()
    for _ in range(n):
        f(x)
    f(x).block_until_ready()
    per_call.append((time.perf_counter() - t) / n)
print(json.dumps({"per_call_us": sorted(per_call)[len(per_call) // 2] * 1e6, "import_s": import_s}))
"""

MODES = {
    "bare": [],
    "counting (before step A)": ["run", "--steps", "1000000000:1000000001", "--no-report", "--"],
    "after capture": ["run", "--steps", "0:1", "--no-report", "--"],
}


def one(mode: list[str], child: Path, out: Path, n: int, repeats: int) -> dict[str, float]:
    cmd = [str(JAXPROF), *mode[:1], "--out", str(out), *mode[1:]] if mode else []
    proc = subprocess.run([*cmd, sys.executable, str(child), str(n), str(repeats)], capture_output=True, text=True,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"}, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    results: dict[str, list[dict[str, float]]] = {k: [] for k in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        child = Path(tmp) / "child.py"
        child.write_text(textwrap.dedent(CHILD))
        for r in range(args.rounds):
            for name, mode in MODES.items():
                results[name].append(one(mode, child, Path(tmp) / f"out{r}", args.calls, args.repeats))
    bare = statistics.median(x["per_call_us"] for x in results["bare"])
    print("\n## `jaxprof run` overhead (`benchmarks/run_overhead.py`)\n")
    print(f"A jitted `x + 1.0` on f32[8] (dispatch is all there is) on CPU, {args.calls:,} calls per timed loop, "
          f"median of {args.repeats} loops per process, {args.rounds} processes per mode taking turns; the "
          "table gives the median over processes (min–max). \"counting\": under `jaxprof run` before step A, "
          "the jax.jit wrapper counts every call; \"after capture\": one step captured in the warm-up, then "
          "calls pass the wrapper with one attribute read. `import jax` time includes the bootstrap's import "
          "hook and, under `jaxprof run`, setting up the capture. Command: `python benchmarks/run_overhead.py` "
          "(`make bench`).\n")
    print("| mode | per call: median (min–max) | over bare | `import jax`: median (min–max) |")
    print("|---|---:|---:|---:|")
    for name, rows in results.items():
        calls = [x["per_call_us"] for x in rows]
        imports = [x["import_s"] * 1e3 for x in rows]
        med = statistics.median(calls)
        print(f"| {name} | {med:.2f} µs ({min(calls):.2f}–{max(calls):.2f}) | "
              f"{'—' if name == 'bare' else f'+{med - bare:.2f} µs'} | "
              f"{statistics.median(imports):.0f} ms ({min(imports):.0f}–{max(imports):.0f}) |")


if __name__ == "__main__":
    main()
