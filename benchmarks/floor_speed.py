"""The floor (issue 34, goal 1): `jaxprof report` against the least any reader of the file must do.

The floor is benchmarks/floor.c: read the file (inflate it when gzip), walk every plane, line, event,
metadata entry and stat with bounds-checked varint and length decoding, count events; nothing kept.
On each file, the floor and `jaxprof report FILE --json --threads 1` run alternately (a warm-up of
each first, then --repeats runs of each, interleaved so drift in the machine's speed hits both
alike), wall time by time.perf_counter around each child, page cache warm. Files: the generated
CPU and GPU layouts (benchmarks/gen_xplane.py) at each --sizes, written to a temporary directory,
and every real capture of at least --real-min-mb in $JAXPROF_REAL_CAPTURES. Writes Markdown to
stdout; the floor is built here with `cc -O2` (see docs/design.md, Benchmarks).

    python benchmarks/floor_speed.py --sizes 10,80 --repeats 5
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import gen_xplane  # noqa: E402

REAL = Path(os.environ.get("JAXPROF_REAL_CAPTURES") or ROOT.parent / "shared" / "captures")
CC_FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Wshadow", "-Wconversion", "-Werror"]


def build_floor(out: Path) -> Path:
    """Compiles benchmarks/floor.c to `out` (again only when the source is newer)."""
    src = HERE / "floor.c"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, *CC_FLAGS, "-o", str(out), str(src), "-lz"], check=True)
    return out


def timed(cmd: list[str]) -> tuple[float, bytes]:
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed on {cmd[-1] if 'floor' in cmd[0] else cmd[2]}: {p.stderr.decode(errors='replace')[-500:]}")
    return wall, p.stdout


def warm(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def measure(floor: Path, jaxprof: str, path: Path, repeats: int) -> dict:
    warm(path)
    fcmd = [str(floor), str(path)]
    rcmd = [jaxprof, "report", str(path), "--json", "--threads", "1"]
    _, out = timed(fcmd)  # warm-up, and the event count
    timed(rcmd)
    counts = json.loads(out)
    fl, rp = [], []
    for _ in range(repeats):
        fl.append(timed(fcmd)[0])
        rp.append(timed(rcmd)[0])
    return {"events": counts["events"], "size": path.stat().st_size, "floor": statistics.median(fl),
            "report": statistics.median(rp), "floor_range": (min(fl), max(fl)), "report_range": (min(rp), max(rp))}


def main() -> None:
    ap = argparse.ArgumentParser()
    beside = Path(sys.executable).parent / "jaxprof"
    ap.add_argument("--jaxprof", default=str(beside) if beside.exists() else shutil.which("jaxprof") or "jaxprof")
    ap.add_argument("--floor", default=str(ROOT / "build" / "floor"), help="where the floor is built")
    ap.add_argument("--layouts", default="cpu,gpu")
    ap.add_argument("--sizes", default="10,80,300", help="MB, comma separated")
    ap.add_argument("--quick", action="store_true", help="leave out sizes over 100 MB")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--real-min-mb", type=float, default=25)
    a = ap.parse_args()
    floor = build_floor(Path(a.floor))
    sizes = [float(s) for s in a.sizes.split(",") if not (a.quick and float(s) > 100)]
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

    print("## The floor: `jaxprof report` against reading the file (issue 34, goal 1)\n")
    print("The floor is `benchmarks/floor.c`: read the file (gunzip when gzip), walk every plane, line, event, "
          "metadata entry and stat with bounds-checked varint and length decoding, count events, keep nothing. "
          f"Each file: a warm-up of each, then {a.repeats} runs of each alternately, median wall time "
          "(time.perf_counter around the child), page cache warm. ns/event: that median ÷ the file's events (the floor's count). "
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
              "none is in this table.")
    print("\nCommands (FILE: each file above):\n")
    print("```")
    print(f"cc {' '.join(CC_FLAGS)} -o build/floor benchmarks/floor.c -lz")
    print("build/floor FILE")
    print("jaxprof report FILE --json --threads 1")
    print(f"python benchmarks/floor_speed.py --sizes {','.join(f'{s:g}' for s in sizes)} --repeats {a.repeats}")
    print("```\n")


if __name__ == "__main__":
    main()
