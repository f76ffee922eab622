"""A/B of two jaxprof builds on the same files: CPU time (user + sys) of `jaxprof report FILE
--json --threads 1`, fresh processes, runs interleaved, median of N. Measures what a change to the
analysis costs (issue 17: the source-line, flame, FLOP-count and roofline passes).

    python benchmarks/ab_builds.py OLD_BIN NEW_BIN FILE... [--runs 7]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess


def cpu_seconds(binary: str, path: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([binary, "report", path, "--json", "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print("| file | MB | old CPU s | new CPU s | new ÷ old |\n|---|---:|---:|---:|---:|")
    for path in args.files:
        old, new = [], []
        for _ in range(args.runs):
            old.append(cpu_seconds(args.old, path))
            new.append(cpu_seconds(args.new, path))
        o, n = statistics.median(old), statistics.median(new)
        print(f"| {os.path.basename(path)} | {os.path.getsize(path) / 1e6:.0f} | {o:.3f} | {n:.3f} | {n / o:.3f} |")


if __name__ == "__main__":
    main()
