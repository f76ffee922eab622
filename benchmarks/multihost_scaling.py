"""Multi-host runs on every core (issue 34 goal 4): `jaxprof report RUN --json` with the default
thread count (a host file per CPU) against `--threads 1` (the files read one after another).

(a) A run of two host files: the default against --threads 1, per layout (goal: <= 0.6x on two
    cores). (b) The scaling curve: runs of 1, 2, 4, ... 64 small host files, time and peak RSS of
    both. (c) An estimate for a 1,024-host pod on a 64-core machine, from the curve's slopes.
Every measurement is a fresh process, page cache warm, median of interleaved runs; peak RSS is the
child's own (os.wait4). benchmarks/gen_xplane.py writes one file per layout and seed; a run's
hosts are hard links of a few distinct files (each host is decoded and modelled in full).

    python benchmarks/multihost_scaling.py --jaxprof build-py/jaxprof
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
from multihost_report import default_jaxprof  # noqa: E402


def measure(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds (user + system) of one run of cmd in a fresh process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def cpu_ticks() -> tuple[int, int]:
    """(idle, total) jiffies of the whole machine so far (/proc/stat; zeros where there is none)."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return f[3] + (f[4] if len(f) > 4 else 0), sum(f)


def make_run(work: Path, name: str, sources: list[Path], n: int) -> Path:
    run = work / name
    run.mkdir()
    for i in range(n):
        os.link(sources[i % len(sources)], run / f"host{i:04d}.xplane.pb")
    return run


def compare(jp: str, run: Path, repeats: int) -> dict[str, tuple[float, float, float, float]]:
    """Median wall seconds, peak MB, CPU seconds, and the least wall seconds, of the default and of
    --threads 1, runs interleaved."""
    cmds = {"default": [jp, "report", str(run), "--json"], "one": [jp, "report", str(run), "--json", "--threads", "1"]}
    for cmd in cmds.values():
        measure(cmd)  # warm the page cache
    got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cmds}
    for _ in range(repeats):
        for k, cmd in cmds.items():
            got[k].append(measure(cmd))
    return {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), statistics.median(x[2] for x in v),
                min(x[0] for x in v)) for k, v in got.items()}


def slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line ys = a + b xs: (a, b)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jaxprof", default=default_jaxprof())
    ap.add_argument("--pair-size", type=float, default=20, help="MB per host file in (a)")
    ap.add_argument("--small-size", type=float, default=2, help="MB per host file in (b)")
    ap.add_argument("--counts", default="1,2,4,8,16,32,64", help="host counts of the curve (b)")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    counts = [int(c) for c in a.counts.split(",")]
    work = Path(tempfile.mkdtemp(prefix="multihost-scaling-"))
    load_before, ticks_before = os.getloadavg(), cpu_ticks()
    pairs = []
    for layout in ("cpu", "gpu"):
        srcs = [work / f"{layout}{s}.xplane.pb" for s in (1, 2)]
        for s, path in enumerate(srcs):
            gen_xplane.generate(path, layout, size_mb=a.pair_size, seed=s + 1)
        pairs.append((layout, srcs[0].stat().st_size / 1e6, compare(a.jaxprof, make_run(work, f"pair-{layout}", srcs, 2), a.repeats)))
    small = [work / f"small{s}.xplane.pb" for s in range(4)]
    for s, path in enumerate(small):
        gen_xplane.generate(path, "cpu" if s % 2 == 0 else "gpu", size_mb=a.small_size, seed=s + 11)
    small_mb = statistics.fmean(p.stat().st_size / 1e6 for p in small)
    curve = [(n, compare(a.jaxprof, make_run(work, f"curve-{n}", small, n), a.repeats)) for n in counts]
    load_after, ticks_after = os.getloadavg(), cpu_ticks()
    total = ticks_after[1] - ticks_before[1]
    idle = 100 * (ticks_after[0] - ticks_before[0]) / total if total > 0 else float("nan")
    shutil.rmtree(work)

    cpus = os.cpu_count() or 1
    print("## Multi-host runs on every core (`benchmarks/multihost_scaling.py`)\n")
    print(f"`jaxprof report RUN --json`: the default (a host file per CPU, here {cpus} workers) against `--threads 1` "
          "(the files read one after another on one thread), both in fresh processes, page cache warm, medians of "
          f"interleaved runs; peak RSS is each process's own. Machine: {cpus} cores, Linux {platform.release()}, "
          f"load average {load_before[0]:.2f} before and {load_after[0]:.2f} after, the cores {idle:.0f}% idle while "
          "it ran (these runs keep one or two of them busy; the machine is shared, and the other load runs on the "
          "same cores: where no core is free, the threads take turns on one).\n")
    print(f"Command: `python benchmarks/multihost_scaling.py --pair-size {a.pair_size:g} --small-size {a.small_size:g} "
          f"--repeats {a.repeats}`\n")
    print("Wall time: median (least); the least is the run that had the cores to itself most. CPU time: user + "
          "system of the whole process, what the threads cost beside one.\n")
    print("### Two host files (goal: ≤ 0.6× the files read one after another)\n")
    print("| layout | MB per host | default | --threads 1 | default ÷ one thread (least ÷ least) | CPU default | "
          "CPU one thread | peak RSS default | peak RSS one thread |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for layout, mb, r in pairs:
        d, o = r["default"], r["one"]
        print(f"| {layout} | {mb:.0f} | {d[0] * 1000:.0f} ({d[3] * 1000:.0f}) ms | {o[0] * 1000:.0f} ({o[3] * 1000:.0f}) ms | "
              f"{d[0] / o[0]:.2f}× ({d[3] / o[3]:.2f}×) | {d[2] * 1000:.0f} ms | {o[2] * 1000:.0f} ms | {d[1]:.0f} MB | "
              f"{o[1]:.0f} MB |")
    print(f"\n### Scaling: runs of N host files of {small_mb:.1f} MB (generated CPU and GPU layouts, 4 distinct files)\n")
    print("| hosts | MB | default | --threads 1 | default ÷ one thread (least ÷ least) | CPU default | CPU one thread | "
          "peak RSS default | peak RSS one thread |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, r in curve:
        d, o = r["default"], r["one"]
        print(f"| {n} | {n * small_mb:.0f} | {d[0] * 1000:.0f} ({d[3] * 1000:.0f}) ms | {o[0] * 1000:.0f} ({o[3] * 1000:.0f}) ms | "
              f"{d[0] / o[0]:.2f}× ({d[3] / o[3]:.2f}×) | {d[2] * 1000:.0f} ms | {o[2] * 1000:.0f} ms | {d[1]:.0f} MB | "
              f"{o[1]:.0f} MB |")
    # (c) per host: one thread costs p + s (decode and model p, merge and analyses s); W workers
    # cost s + p / W where the merge keeps up (a lower bound on the calling thread's share)
    ns = [float(n) for n, _ in curve]
    _, one_per = slope(ns, [r["one"][3] for _, r in curve])  # the least times: the cores most free
    base, par_per = slope(ns, [r["default"][3] for _, r in curve])
    _, rss_per = slope(ns, [r["default"][1] for _, r in curve])
    w = min(cpus, max(counts))
    p = max((one_per - par_per) * w / (w - 1), 0.0) if w > 1 else 0.0
    s = max(one_per - p, 0.0)
    pod_hosts, pod_cores = 1024, 64
    pod_time = base + pod_hosts * (s + p / pod_cores)
    pod_one = base + pod_hosts * one_per
    print(f"\n### Estimate: a 1,024-host pod on 64 cores (hosts of {small_mb:.1f} MB)\n")
    print(f"From the slopes of the curve's least times: one thread costs {one_per * 1000:.1f} ms per host; {w} workers "
          f"{par_per * 1000:.1f} ms per host. Taking the per-host cost as p (decode and model, parallel) + s (merge "
          f"and the analyses, on the calling thread), p + s = {one_per * 1000:.1f} ms and s + p/{w} = "
          f"{par_per * 1000:.1f} ms give p = {p * 1000:.1f} ms and s = {s * 1000:.1f} ms. 1,024 hosts on 64 workers: "
          f"{base * 1000:.0f} ms + 1024 × (s + p/64) ≈ **{pod_time:.1f} s** (one thread: ≈ {pod_one:.1f} s, "
          f"{pod_one / pod_time:.1f}× longer); the serial part s bounds it at {pod_hosts * s:.1f} s whatever the cores. "
          f"Memory grows by {rss_per:.1f} MB per host (the merged model; each worker holds one file and one host "
          f"at a time): ≈ {pod_hosts * rss_per / 1024:.1f} GB for 1,024 such hosts, plus 64 files in flight. "
          "Scale both by the hosts' size: per-host costs are linear in events.\n")


if __name__ == "__main__":
    main()
