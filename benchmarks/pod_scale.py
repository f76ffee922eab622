"""Pod scale (issue 36): the in-job merge of real jax.distributed CPU jobs, and merges of generated
runs of many hosts from their summaries, against the same runs read from their raw files.

1. Jobs: N processes (tests/python/multihost_worker.py, each in a directory of its own, as machines
   that share no file system; process 1 the planted straggler). Each process prints the wall-clock
   time its capture ended; process 0's log record of the merged report carries its own time. The
   latency is that record's time minus the last process's capture end: summarising in a child,
   sharing through the key-value store, gathering and the merged report.
2. Merges: one generated host file (benchmarks/gen_xplane.py), hard-linked as every host of a run,
   its summary copied for each host. `jaxprof hosts RUN --json --threads 1` reads the summaries;
   the peer, `--full`, reads the raw files (the same run: the same merge, and the per-host work from
   the events), both in fresh processes, page cache warm. Peak RSS from wait4.

    python benchmarks/pod_scale.py --processes 2,4,8 --hosts 64,256,1024 --raw-up-to 256
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
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
from multihost_scaling import measure as measure_run  # noqa: E402
from viewer_speed import free_port  # noqa: E402

WORKER = Path(__file__).resolve().parents[1] / "tests" / "python" / "multihost_worker.py"
LM_WORKER = WORKER.with_name("pod_lm_worker.py")  # the realistic job: Flax NNX LM + AdamW, data-parallel
SUFFIX = ".jaxprof-summary.json"


def job_latency(count: int, work: Path, lm: bool = False) -> tuple[float, str]:
    """Seconds from the last capture end to process 0's merged report, and that report's line."""
    root = work / f"job{count}{'-lm' if lm else ''}"
    port = free_port()
    env = {**os.environ, "JAXPROF_BENCH_TIMES": "1"}
    args = (lambda i: [str(LM_WORKER), str(i), str(count), str(port), str(root)]) if lm else \
        (lambda i: [str(WORKER), str(i), str(count), str(port), str(root), "--own-disk", "--slow", "3,4"])
    procs = [subprocess.Popen([sys.executable, *args(i)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env, cwd=WORKER.parent) for i in range(count)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"a process of the {count}-process job failed:\n" + "\n".join(o[-2000:] for o in outs))
    ends = [float(m.group(1)) for o in outs for m in re.finditer(r"^capture_end ([0-9.]+)$", o, re.M)]
    merged = re.search(r"^([0-9.]+) INFO jaxprof: (.*merged from their summaries.*)$", outs[0], re.M)
    if len(ends) != count or not merged:
        raise SystemExit(f"no timings in the {count}-process job's output:\n{outs[0][-3000:]}")
    return float(merged.group(1)) - max(ends), merged.group(2)


def measure(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one fresh process."""
    seconds, rss_mb, _cpu = measure_run(cmd)
    return seconds, int(rss_mb * 2**20)


def make_run(work: Path, template: Path, summary: dict, hosts: int) -> Path:
    """A run of `hosts` links of the template file, each with its summary (host names changed)."""
    run = work / f"run{hosts}"
    run.mkdir()
    for i in range(hosts):
        host = f"host{i:04d}-p{i}"
        os.link(template, run / f"{host}.xplane.pb")
        doc = dict(summary, host=host, file=f"{host}.xplane.pb")
        (run / f"{host}{SUFFIX}").write_text(json.dumps(doc, separators=(",", ":")))
    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jaxprof", default=default_jaxprof())
    ap.add_argument("--processes", default="2,4,8")
    ap.add_argument("--hosts", default="64,256,1024")
    ap.add_argument("--raw-up-to", type=int, default=256, help="read the raw files (the peer) up to this many hosts")
    ap.add_argument("--size", type=float, default=2, help="MB per generated host file")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pod-bench-"))
    jobs = [(str(n), *job_latency(n, work)) for n in map(int, a.processes.split(",")) if n]
    jobs.append(("2, realistic LM", *job_latency(2, work, lm=True)))

    template = work / "template.xplane.pb"
    gen_xplane.generate(template, "gpu", size_mb=a.size)
    subprocess.run([a.jaxprof, "summarize", str(template)], check=True, stdout=subprocess.DEVNULL)
    summary_path = work / f"template{SUFFIX}"
    summary = json.loads(summary_path.read_text())
    merges = []
    for n in map(int, a.hosts.split(",")):
        run = make_run(work, template, summary, n)
        hosts = [a.jaxprof, "hosts", str(run), "--json", "--threads", "1"]
        measure(hosts)  # warm the page cache
        got = [measure(hosts) for _ in range(a.repeats)]
        raw = [measure(hosts + ["--full"]) for _ in range(a.repeats)] if n <= a.raw_up_to else []
        merges.append((n, statistics.median(t for t, _ in got), max(r for _, r in got),
                       statistics.median(t for t, _ in raw) if raw else None, max((r for _, r in raw), default=None)))
        shutil.rmtree(run)
    size_kb = summary_path.stat().st_size / 1024
    shutil.rmtree(work)

    print("## Pod scale (`benchmarks/pod_scale.py`)\n")
    print(f"Machine: {os.cpu_count()} cores, Linux {platform.release()}. Command: "
          f"`python benchmarks/pod_scale.py --processes {a.processes} --hosts {a.hosts} --raw-up-to {a.raw_up_to}`\n")
    print("In-job merge of real `jax.distributed` CPU jobs (tests/python/multihost_worker.py, each process in a "
          "directory of its own, process 1 the planted straggler): from the last process's capture end to process "
          "0's log record of the merged report (each process summarises its file in a child process, shares the "
          "summary through the key-value store; process 0 gathers and runs the report). The captures are small "
          "(4 steps of a 128×128 model, a few hundred events per process), so this is the exchange's own cost; "
          "with real captures each process adds the time `jaxprof summarize` takes on its own file (about the "
          "report's time for one file, above), in parallel on every machine. The last row is the realistic job "
          "(tests/python/pod_lm_worker.py: a Flax NNX transformer LM with AdamW, data-parallel over 2 processes x 2 "
          "CPU devices, 2.6 MB and about 16,000 events per process).\n")
    print("| processes | capture end → merged report | process 0's line |")
    print("|---|---:|---|")
    for n, latency, line in jobs:
        print(f"| {n} | {latency:.2f} s | {line[:160]}{'...' if len(line) > 160 else ''} |")
    print(f"\nMerges of generated runs: one {a.size:g} MB GPU-layout host file linked as every host, its summary "
          f"({size_kb:.0f} KiB) copied for each. `jaxprof hosts RUN --json --threads 1` from the summaries against "
          f"`--full` (the raw files; up to {a.raw_up_to} hosts), fresh processes, median of {a.repeats}, peak RSS "
          "the largest. Goal: 1,024 hosts under 5 s and 1 GB on one core.\n")
    print("| hosts | from summaries | peak RSS | from raw files | peak RSS | raw ÷ summaries |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, t, rss, raw_t, raw_rss in merges:
        raw = f"{raw_t:.2f} s | {raw_rss / 2**20:.0f} MiB | {raw_t / t:.1f}×" if raw_t else "not run | | "
        print(f"| {n} | {t:.2f} s | {rss / 2**20:.0f} MiB | {raw} |")
    print()


if __name__ == "__main__":
    main()
