"""The floor (issue 34, goal 1): `jaxprof report` against the least any reader of the file must do.

The floor is benchmarks/floor.c: read the file (inflate it when gzip), walk every plane, line, event,
metadata entry and stat with bounds-checked varint and length decoding, count events; nothing kept.
On each file, the floor and `jaxprof report FILE --json --threads 1` run alternately (a warm-up of
each first, then --repeats runs of each, interleaved so drift in the machine's speed hits both
alike), wall time from fork to wait4 of each child (benchmarks/peak_rss.c), page cache warm. Files: the generated
CPU and GPU layouts (benchmarks/gen_xplane.py) at each --sizes, written to a temporary directory,
and every real capture of at least --real-min-mb in $JAXPROF_REAL_CAPTURES. Writes Markdown to
stdout; the floor is built here with `cc -O2` (see docs/design.md, Benchmarks).

The real capture of a realistic model (goal 1 asks for one of 25 MB or more) is
benchmarks/real_capture.py's transformer LM (--real-steps steps, made once and cached under
build/bench-captures/; 0 leaves it out). Peak RSS (goal 3: ≤ file + 64 MB) is the ru_maxrss that
wait4 returns for the `jaxprof report` child in benchmarks/peak_rss.c (a 1 MB C parent: a Python
parent's RSS would be inherited into the number), the most over its runs: Linux folds into it the
peak of every descendant the child waited for, so it covers the worker that `jaxprof` forks for
isolation (cli/isolate.c). The RSS table adds every XSpace in $JAXPROF_REAL_CAPTURES, each
unpacked to a temporary file first (its size there is the "file" of the goal), --rss-repeats runs.

    python benchmarks/floor_speed.py --sizes 10,80 --repeats 5
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import gen_xplane  # noqa: E402
import real_capture  # noqa: E402

REAL = Path(os.environ.get("JAXPROF_REAL_CAPTURES") or ROOT.parent / "shared" / "captures")
CC_FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Wshadow", "-Wconversion", "-Werror"]


def build_c(name: str, out: Path, libs: tuple[str, ...] = ()) -> Path:
    """Compiles benchmarks/<name>.c to `out` (again only when the source is newer)."""
    src = HERE / f"{name}.c"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, *CC_FLAGS, "-o", str(out), str(src), *libs], check=True)
    return out


def build_floor(out: Path) -> Path:
    return build_c("floor", out, ("-lz",))


def run_rusage(cmd: list[str], timeout: float | None = None, env: dict | None = None, keep_out: bool = True) -> dict:
    """Runs cmd under benchmarks/peak_rss.c: its wall seconds (fork to wait4, measured there), its peak
    RSS in bytes (ru_maxrss of wait4: waited-for descendants included), CPU seconds, exit status,
    stdout (b"" unless keep_out; else it goes to /dev/null), stderr's tail. On a timeout:
    {"timeout": True}."""
    wrapper = build_c("peak_rss", ROOT / "build" / "peak_rss")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(prefix="peak-rss-") as res:
        # a session of its own, so that a timeout ends the command too, not only the wrapper
        p = subprocess.Popen([str(wrapper), res.name, *cmd], stdout=out if keep_out else subprocess.DEVNULL,
                             stderr=err, env=env, start_new_session=True)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return {"timeout": True, "rc": None, "err": ""}
        if p.returncode != 0:
            err.seek(0)
            sys.exit(f"peak_rss could not run {cmd[0]}: {err.read()[-500:].decode(errors='replace')}")
        wall, kib, rc, cpu = Path(res.name).read_text().split()
        out.seek(0)
        err.seek(0)
        return {"timeout": False, "wall": float(wall), "rss": int(kib) * 1024, "rc": int(rc), "cpu": float(cpu),
                "out": out.read(),
                "err": err.read()[-2000:].decode(errors="replace")}


def timed(cmd: list[str]) -> tuple[float, bytes, int]:
    r = run_rusage(cmd)
    if r["rc"] != 0:
        sys.exit(f"{cmd[0]} failed on {cmd[-1] if 'floor' in cmd[0] else cmd[2]}: {r['err'][-500:]}")
    return r["wall"], r["out"], r["rss"]


def warm(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def measure(floor: Path, jaxprof: str, path: Path, repeats: int) -> dict:
    warm(path)
    fcmd = [str(floor), str(path)]
    rcmd = [jaxprof, "report", str(path), "--json", "--threads", "1"]
    _, out, _ = timed(fcmd)  # warm-up, and the event count
    rss = [timed(rcmd)[2]]
    counts = json.loads(out)
    fl, rp = [], []
    for _ in range(repeats):
        fl.append(timed(fcmd)[0])
        wall, _, peak = timed(rcmd)
        rp.append(wall)
        rss.append(peak)
    return {"events": counts["events"], "size": path.stat().st_size, "floor": statistics.median(fl),
            "report": statistics.median(rp), "floor_range": (min(fl), max(fl)), "report_range": (min(rp), max(rp)),
            "rss": max(rss)}


def shared_rss(jaxprof: str, repeats: int) -> list[tuple[str, dict]]:
    """Peak RSS of `jaxprof report FILE --json --threads 1` on every XSpace of $JAXPROF_REAL_CAPTURES."""
    rows = []
    if not REAL.is_dir():
        return rows
    with tempfile.TemporaryDirectory(prefix="floor-rss-") as tmp:
        for src in sorted(REAL.glob("*.xplane.pb*")):
            path = Path(tmp) / src.name.removesuffix(".gz")
            if src.name.endswith(".gz"):
                with gzip.open(src) as fin, open(path, "wb") as fout:
                    shutil.copyfileobj(fin, fout)
            else:
                shutil.copyfile(src, path)
            runs = [run_rusage([jaxprof, "report", str(path), "--json", "--threads", "1"]) for _ in range(repeats)]
            rows.append((f"shared: {src.name}", {"size": path.stat().st_size, "rss": max(r["rss"] for r in runs),
                                                 "rc": runs[0]["rc"], "err": runs[0]["err"]}))
            path.unlink()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    beside = Path(sys.executable).parent / "jaxprof"
    ap.add_argument("--jaxprof", default=str(beside) if beside.exists() else shutil.which("jaxprof") or "jaxprof")
    ap.add_argument("--floor", default=str(ROOT / "build" / "floor"), help="where the floor is built")
    ap.add_argument("--layouts", default="cpu,gpu")
    ap.add_argument("--sizes", default="10,80,300", help="MB, comma separated ('' for none)")
    ap.add_argument("--quick", action="store_true", help="leave out sizes over 100 MB")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--real-min-mb", type=float, default=25)
    ap.add_argument("--real-steps", type=int, default=150,
                    help="steps of benchmarks/real_capture.py's transformer LM capture (0: leave it out)")
    ap.add_argument("--rss-repeats", type=int, default=3, help="runs per shared capture in the RSS table")
    a = ap.parse_args()
    floor = build_floor(Path(a.floor))
    sizes = [float(s) for s in a.sizes.split(",") if s and not (a.quick and float(s) > 100)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="floor-speed-") as tmp:
        for layout in a.layouts.split(","):
            for mb in sizes:
                path = Path(tmp) / f"{layout}-{mb:g}.xplane.pb"
                gen_xplane.generate(path, layout, size_mb=mb)
                rows.append((f"generated {layout}, {mb:g} MB", measure(floor, a.jaxprof, path, a.repeats)))
                path.unlink()
    real = sorted(p for p in REAL.glob("*.xplane.pb*") if p.stat().st_size >= a.real_min_mb * 1e6) if REAL.is_dir() else []
    for path in real:
        rows.append((f"real: {path.name}", measure(floor, a.jaxprof, path, a.repeats)))
    if a.real_steps:
        lm = real_capture.cached(a.real_steps)
        rows.append((f"real: transformer LM, {a.real_steps} steps (real_capture.py)",
                     measure(floor, a.jaxprof, lm, a.repeats)))
    small = shared_rss(a.jaxprof, a.rss_repeats)

    print("## The floor: `jaxprof report` against reading the file (issue 34, goal 1)\n")
    print("The floor is `benchmarks/floor.c`: read the file (gunzip when gzip), walk every plane, line, event, "
          "metadata entry and stat with bounds-checked varint and length decoding, count events, keep nothing. "
          f"Each file: a warm-up of each, then {a.repeats} runs of each alternately, median wall time "
          "(fork to wait4 of the child, in `benchmarks/peak_rss.c`), page cache warm. ns/event: that median ÷ the file's events (the floor's count). "
          "Goal: report ≤ 2.0× the floor.\n")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end.\n")
    print("| file | MB | events | floor ms | floor ns/event | report ms | report ns/event | report ÷ floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        n = r["events"]
        print(f"| {name} | {r['size'] / 1e6:.1f} | {n:,} | {r['floor'] * 1e3:.0f} | {r['floor'] * 1e9 / n:.0f} | "
              f"{r['report'] * 1e3:.0f} | {r['report'] * 1e9 / n:.0f} | {r['report'] / r['floor']:.2f}× |")
    if not real:
        print(f"\nNo real capture of {a.real_min_mb:g} MB or more in {REAL} ($JAXPROF_REAL_CAPTURES): "
              "none of those is in this table.")
    print("\n### Peak RSS of `jaxprof report FILE --json --threads 1` (issue 34, goal 3: ≤ file + 64 MB)\n")
    print("ru_maxrss from wait4 of the `jaxprof` child in `benchmarks/peak_rss.c` (its forked worker included), the most over the runs "
          f"above ({a.repeats + 1} per file) and, for the captures of $JAXPROF_REAL_CAPTURES unpacked to a temporary "
          f"file, over {a.rss_repeats} runs. File: the uncompressed bytes jaxprof reads.\n")
    print("| file | file MB | peak RSS MB | RSS − file MB | ≤ file + 64 MB |")
    print("|---|---:|---:|---:|:---:|")
    for name, r in rows + small:
        over = (r["rss"] - r["size"]) / 1e6
        note = "" if r.get("rc", 0) == 0 else f" (rejected as malformed: exit {r['rc']})"
        print(f"| {name}{note} | {r['size'] / 1e6:.2f} | {r['rss'] / 1e6:.1f} | {over:+.1f} | {'yes' if over <= 64 else '**no**'} |")
    print("\nCommands (FILE: each file above; the generated ones are written by gen_xplane.py to a temporary directory):\n")
    print("```")
    print(f"cc {' '.join(CC_FLAGS)} -o build/floor benchmarks/floor.c -lz")
    print(f"cc {' '.join(CC_FLAGS)} -o build/peak_rss benchmarks/peak_rss.c")
    print("build/peak_rss RESULT build/floor FILE")
    print("build/peak_rss RESULT jaxprof report FILE --json --threads 1")
    print("python benchmarks/real_capture.py" + (f" --steps {a.real_steps}" if a.real_steps else "  # not run: --real-steps 0"))
    print(f"python benchmarks/floor_speed.py --sizes {','.join(f'{s:g}' for s in sizes)} --repeats {a.repeats} "
          f"--real-steps {a.real_steps} --rss-repeats {a.rss_repeats}")
    print("```\n")


if __name__ == "__main__":
    main()
