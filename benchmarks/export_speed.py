"""Export speed: `jaxprof export` against JAX's own trace path on the same capture.

JAX's path is what `jax.profiler.start_trace(create_perfetto_trace=True)` runs after a capture:
the C++ XSpace -> trace JSON conversion (`ProfilerSession.export`, which also rewrites the xplane,
a few ms) followed by `jax._src.profiler._write_perfetto_trace_file` (json.load of that file,
dropping its metadata, json.dumps + gzip in Python). jaxprof's path is one `jaxprof export` process
(Chrome JSON, gzip level 1) and its Perfetto protobuf variant. Medians of REPEATS runs, in one
process on one capture; also the number of timeline events each output holds.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
from jax._src import profiler as jax_profiler  # noqa: E402
from jax._src.lib import _profiler  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from analysis_speed import capture  # noqa: E402

JAXPROF = Path(sys.executable).parent / "jaxprof"


def timed(fn, repeats: int) -> list[float]:
    fn()  # warm the page cache
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def jax_path(xspace: bytes, out_dir: Path) -> Path:
    session = _profiler.ProfilerSession()
    session.stop()
    session.export(xspace, str(out_dir))
    return jax_profiler._write_perfetto_trace_file(out_dir)


def timeline_events(path: Path) -> int:
    doc = json.load(gzip.open(path))
    return sum(e.get("ph") in ("X", "i", "I") for e in doc["traceEvents"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        path = capture(tmp / "capture", args.steps)
        xspace = path.read_bytes()
        chrome, pftrace = tmp / "out.json.gz", tmp / "out.pftrace"

        def ours(fmt: str, out: Path) -> None:
            subprocess.run([str(JAXPROF), "export", str(path), "-o", str(out), "--format", fmt],
                           check=True, capture_output=True)

        runs = iter(range(10**6))
        t_chrome = timed(lambda: ours("chrome", chrome), args.repeats)
        t_pf = timed(lambda: ours("perfetto", pftrace), args.repeats)
        t_jax = timed(lambda: jax_path(xspace, tmp / f"jax{next(runs)}"), args.repeats)
        jax_out = jax_path(xspace, tmp / "jax_final")
        ours_doc = json.load(gzip.open(chrome))["otherData"]
        n_jax = timeline_events(jax_out)
        sizes = {"chrome": chrome.stat().st_size, "pf": pftrace.stat().st_size, "jax": jax_out.stat().st_size}
        size, events = path.stat().st_size, ours_doc["events_in"]

    def row(name: str, samples: list[float], n_out: str, nbytes: int, peer: float) -> str:
        med = statistics.median(samples)
        ratio = "1.0× (peer)" if med == peer else f"{peer / med:.1f}× faster"
        return (f"| {name} | {med * 1e3:.0f} ms | {min(samples) * 1e3:.0f}–{max(samples) * 1e3:.0f} ms | "
                f"{n_out} | {nbytes / 1e6:.1f} MB | {ratio} |")

    peer = statistics.median(t_jax)
    print("\n## Export speed (`benchmarks/export_speed.py`)\n")
    print(f"The same real CPU capture ({args.steps} steps of 10 dispatches, Python tracer on, {size / 1e6:.1f} MB, "
          f"{events:,} events), median of {args.repeats} runs (min–max). JAX's path = `ProfilerSession.export` "
          "(C++ trace JSON) + `_write_perfetto_trace_file` (Python json load/dump), what "
          "`create_perfetto_trace=True` runs; jaxprof = one `jaxprof export` process (decode, analysis for the "
          "Steps row, write).\n")
    print("| what | median | min–max | timeline events out | file | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    print(row("JAX trace JSON + perfetto rewrite", t_jax, f"{n_jax:,}", sizes["jax"], peer))
    print(row("`jaxprof export` (Chrome JSON, gzip 1)", t_chrome,
              f"{ours_doc['events_out']:,} + {ours_doc['derived']:,} derived", sizes["chrome"], peer))
    print(row("`jaxprof export --format perfetto`", t_pf, "same", sizes["pf"], peer))
    print(f"\njaxprof wrote every one of the {events:,} events "
          f"({ours_doc['overlap_tracks']} overlap threads, {ours_doc['flows']:,} flows); JAX's file holds "
          f"{n_jax:,} timeline events.\n")


if __name__ == "__main__":
    main()
