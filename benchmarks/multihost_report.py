"""Multi-host report cost: `jaxprof report` on a run of two host files against reporting each file
alone, both measured here, in one process per report.

A run of two hosts is decoded once, like two single-host reports, but is also analysed host by
host (steps, breakdown and ops per host), aligned, and merged. The peer is the sum of two
single-file reports of the same files: the same decode and model work without the per-host pass.
benchmarks/gen_xplane.py writes one file per layout; the run links it twice (hosts a and b).

    python benchmarks/multihost_report.py --jaxprof build-py/jaxprof --size 40
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_xplane  # noqa: E402


def default_jaxprof() -> str:
    """The jaxprof beside this Python (the venv's), else the one on PATH: every benchmark's --jaxprof default."""
    beside = Path(sys.executable).with_name("jaxprof")
    return str(beside) if beside.exists() else shutil.which("jaxprof") or "jaxprof"


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jaxprof", default=default_jaxprof())
    ap.add_argument("--size", type=float, default=40, help="MB per host file")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="multihost-bench-"))
    rows = []
    for layout in ("cpu", "gpu"):
        one = work / f"{layout}.xplane.pb"
        gen_xplane.generate(one, layout, size_mb=a.size)
        run = work / f"{layout}-run"
        run.mkdir()
        for host in ("a", "b"):
            os.link(one, run / f"{host}.xplane.pb")
        report = [a.jaxprof, "report", "--json", "--threads", "1"]
        wall(report + [str(run)])  # warm the page cache
        multi, single = [], []
        for _ in range(a.repeats):  # interleaved, so drift in the machine's speed hits both alike
            multi.append(wall(report + [str(run)]))
            single.append(wall(report + [str(one)]) + wall(report + [str(one)]))
        rows.append((layout, one.stat().st_size / 1e6, statistics.median(multi), statistics.median(single)))
    shutil.rmtree(work)
    print("## Multi-host report (`benchmarks/multihost_report.py`)\n")
    print("A run of two host files (one generated profile linked as hosts `a` and `b`): `jaxprof report RUN --json "
          "--threads 1` against the peer, `jaxprof report FILE --json --threads 1` run once per file (same decode and "
          "model work, no per-host analyses, alignment or merge), both in fresh processes, page cache warm, "
          f"median of {a.repeats} interleaved runs. Machine: {os.cpu_count()} cores, Linux {platform.release()}.\n")
    print(f"Command: `python benchmarks/multihost_report.py --size {a.size:g}`\n")
    print("| layout | MB per host | 2-host run | 2 single-host reports | run ÷ singles |")
    print("|---|---:|---:|---:|---:|")
    for layout, mb, multi, single in rows:
        print(f"| {layout} | {mb:.0f} | {multi * 1000:.0f} ms | {single * 1000:.0f} ms | {multi / single:.2f}× |")
    print()


if __name__ == "__main__":
    main()
