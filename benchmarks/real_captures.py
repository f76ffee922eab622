"""Report speed on the real captures of ../shared/captures: `jaxprof report` against XProf's converters.

    python benchmarks/real_captures.py [--xprof-python PATH] [--repeats N]

Per capture (unpacked into a temporary directory first): jaxprof = `jaxprof report FILE --json >
/dev/null` in a fresh process (decode + model + every analysis + JSON); XProf = overview_page,
op_profile and hlo_stats converted in one fresh Python process (its import included, as a user
pays it). Medians of N interleaved runs; prints a markdown section for docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_speed import XPROF_CHILD, fmt_s, measured  # noqa: E402

REAL = Path(os.environ.get("JAXPROF_REAL_CAPTURES") or Path(__file__).resolve().parents[2] / "shared" / "captures")  # beside the project, never in it


def main() -> int:
    beside = Path(sys.executable).parent / "jaxprof"
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jaxprof", default=str(beside))
    ap.add_argument("--xprof-python", default=sys.executable, help="a Python with the xprof package")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for gz in sorted(REAL.glob("*.xplane.pb.gz")):
            if gz.name.startswith("mangled"):
                continue
            path = Path(tmp) / gz.name.removesuffix(".gz")
            with gzip.open(gz) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            ours, theirs = [], []
            for _ in range(a.repeats):
                r = measured([a.jaxprof, "report", str(path), "--json"], 600)
                if r.get("rc") != 0:
                    sys.exit(f"jaxprof failed on {path}: {r.get('err')}")
                ours.append(r["wall"])
                x = measured([a.xprof_python, "-c", XPROF_CHILD, str(path)], 600)
                theirs.append(x["wall"] if x.get("rc") == 0 else float("nan"))
            j, x = statistics.median(ours), statistics.median(theirs)
            rows.append((gz.name, path.stat().st_size / 1e6, j, x))
    print("## Real captures (`benchmarks/real_captures.py`)\n")
    print("The captures of `../shared/captures` (written by others; provenance in its README), each read by a "
          "fresh `jaxprof report FILE --json` and by XProf converting it to overview_page, op_profile and "
          f"hlo_stats in one fresh Python process; medians of {a.repeats} interleaved runs. Small files: "
          "process start-up and XProf's import dominate, so this measures what a user waits for, not "
          "throughput (the generated-profile table below does that).\n")
    print("| capture | MB | jaxprof | XProf (3 tools) | XProf / jaxprof |")
    print("|---|---:|---:|---:|---:|")
    for name, mb, j, x in rows:
        print(f"| `{name}` | {mb:.2f} | {fmt_s(j)} | {fmt_s(x)} | {x / j:.0f}x |")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
