"""SQL export speed (issue 35): `jaxprof export FILE --format sqlite` (every analysis table and every
event with its stats) against `jaxprof report FILE --json` on the same file, runs alternating in
fresh processes, page cache warm; the database's size and rows; and one aggregate query over the
events of the written file (`jaxprof sql run.db ...`).

    python benchmarks/sql_speed.py --jaxprof .venv/bin/jaxprof
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_xplane  # noqa: E402
from multihost_report import default_jaxprof, wall as timed  # noqa: E402

QUERY = "SELECT name, count(*), sum(dur_ps) FROM events GROUP BY name ORDER BY 3 DESC LIMIT 10"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jaxprof", default=default_jaxprof())
    ap.add_argument("--size", type=float, default=80, help="MB of each generated layout")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sql-speed-"))
    rows = []
    for layout in ("cpu", "gpu"):
        src = work / f"{layout}.xplane.pb"
        gen_xplane.generate(src, layout, size_mb=a.size)
        db = work / f"{layout}.db"
        report = [a.jaxprof, "report", str(src), "--json"]
        export = [a.jaxprof, "export", str(src), "--format", "sqlite", "-o", str(db)]
        query = [a.jaxprof, "sql", str(db), QUERY]
        timed(report), timed(export)  # warm the page cache
        t_report, t_export, t_query = [], [], []
        for _ in range(a.repeats):
            t_report.append(timed(report))
            t_export.append(timed(export))
            t_query.append(timed(query))
        con = sqlite3.connect(db)
        events = con.execute("SELECT count(*) FROM events").fetchone()[0]
        columns = con.execute("SELECT count(*) FROM pragma_table_info('events')").fetchone()[0]
        con.close()
        rows.append((layout, src.stat().st_size / 1e6, events, columns, db.stat().st_size / 1e6,
                     statistics.median(t_report), statistics.median(t_export), statistics.median(t_query)))
    shutil.rmtree(work)
    print("\n## SQL export (`benchmarks/sql_speed.py`)\n")
    print(f"`jaxprof export FILE --format sqlite` (every analysis table and every event, its stats as columns) "
          f"against `jaxprof report FILE --json` on the same generated layouts, fresh processes alternating, "
          f"medians of {a.repeats}, page cache warm; then `jaxprof sql` on the written file: `{QUERY}`. "
          f"Machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end.\n")
    print(f"Command: `python benchmarks/sql_speed.py --size {a.size:g} --repeats {a.repeats}`\n")
    print("| layout | file | events | event columns | database | report --json | export sqlite | export ÷ report | query on the file |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for layout, mb, events, cols, db_mb, rep, exp, q in rows:
        print(f"| {layout} | {mb:.0f} MB | {events:,} | {cols} | {db_mb:.0f} MB | {rep * 1000:.0f} ms | {exp * 1000:.0f} ms | "
              f"{exp / rep:.1f}× | {q * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
