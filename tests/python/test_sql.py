"""`jaxprof sql` and `jaxprof export --format sqlite` (issue 35): every analysis table equals its
--json table row for row, and the events equal the raw xplane read with JAX's own ProfileData, on
real captures written by others and on the project's H200 captures."""
from __future__ import annotations

import collections
import json
import os
import pty
import select
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import JAXPROF_BIN, REAL_CAPTURES, jaxprof_json, run_jaxprof
from raw_events import raw_planes

HERE = Path(__file__).resolve().parent
GPU = HERE.parent / "data" / "gpu" / "h200_transformer_nocb.xplane.pb.gz"
CPU_SMALL = HERE.parent / "data" / "cpu_small.xplane.pb.gz"
ALL_REAL = sorted(REAL_CAPTURES.glob("*.xplane.pb.gz")) if REAL_CAPTURES.is_dir() else []
REAL = [p for p in ALL_REAL if not p.name.startswith("mangled")]  # that one is corrupt on purpose

# (section, table): each table of the library, from the section whose --json holds every row
TABLES = [("report", "devices"), ("report", "kpis"), ("ops", "ops"), ("ops", "precision"), ("steps", "steps"),
          ("scopes", "scopes"), ("kernels", "kernels"), ("memory", "memory"), ("memory", "modules"),
          ("transfers", "transfers"), ("compiles", "compiles"), ("findings", "findings"), ("lines", "lines"),
          ("flame", "flame"), ("hosts", "host_stats"), ("hosts", "host_steps"), ("hosts", "stragglers"),
          ("launch", "launches"), ("launch", "launch_streams"), ("comm", "comm"), ("comm", "comm_instances")]
NESTED = {"kind_bytes", "buffers", "timeline"}  # modules[]' nested parts: tables of their own in SQL


def sql_json(path: Path | str, query: str, *args: str) -> list[dict]:
    proc = run_jaxprof("sql", str(path), query, "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def as_json_row(row: dict) -> dict:
    """A SQL row as --json writes it: Python stacks are JSON arrays there, text here."""
    return {k: json.loads(v) if k == "stack" and isinstance(v, str) else v for k, v in row.items()}


def plain(v):
    return int(v) if isinstance(v, bool) else v


def assert_tables_equal(path: Path, query_path: Path | str) -> int:
    checked = 0
    docs: dict[str, dict] = {}
    for section, name in TABLES:
        doc = docs.setdefault(section, jaxprof_json(section, path, "--top", "0"))
        want = [{k: plain(v) for k, v in r.items() if k not in NESTED} for r in doc.get(name, [])]
        got = [as_json_row(r) for r in sql_json(query_path, f'SELECT * FROM "{name}"')]
        if name == "modules":  # SQL keeps every module; `memory` lists those that ran (all when none did)
            ran = [m for m in got if m["runs"] > 0]
            got, want = sorted(ran or got, key=str), sorted(want, key=str)
        assert got == want, f"{path.name}: table {name}"
        checked += len(got)
    return checked


@pytest.mark.parametrize("path", [CPU_SMALL, GPU] + REAL, ids=lambda p: p.name)
def test_every_analysis_table_equals_its_json_rows(path: Path) -> None:
    assert assert_tables_equal(path, path) > 0


def test_the_header_and_step_summary_equal_the_json_documents() -> None:
    doc = jaxprof_json("report", GPU)
    (prof,) = sql_json(GPU, "SELECT * FROM profile")
    for k in ("platform", "events", "span_ms", "device_busy_ms", "device_idle_pct", "schema_version"):
        assert prof[k] == doc[k], k
    (summary,) = sql_json(GPU, "SELECT * FROM step_summary")
    for k in ("method", "count", "mean_ms", "median_ms", "p90_ms", "total_ms", "gap_ms"):
        assert summary[k] == doc["step_summary"][k], k


def raw_events(path: Path) -> list[tuple[str, str, str, int, int, dict]]:
    """(plane, thread, name, start ns, duration ns, stats) of every event, by JAX's ProfileData."""
    out = []
    for plane in raw_planes(path):
        for line in plane.lines:
            for ev in line.events:
                out.append((plane.name, line.name, ev.name, ev.start_ns, ev.duration_ns, dict(ev.stats)))
    return out


@pytest.mark.parametrize("path", [GPU] + [p for p in REAL if "tpu" in p.name or "mi300_jax08_gemm" in p.name],
                         ids=lambda p: p.name)
def test_events_equal_the_raw_xplane(path: Path) -> None:
    raw = raw_events(path)
    rows = sql_json(path, "SELECT plane, name, start_ps, dur_ps FROM events ORDER BY event_id")
    assert len(rows) == len(raw)
    count = collections.Counter((p, n) for p, _, n, _, _, _ in raw)
    assert collections.Counter((r["plane"], r["name"]) for r in rows) == count
    dur = collections.defaultdict(float)
    for p, _, n, _, d, _ in raw:
        dur[(p, n)] += d
    got = collections.defaultdict(int)
    for r in rows:
        got[(r["plane"], r["name"])] += r["dur_ps"]
    # ProfileData keeps whole nanoseconds of a picosecond duration (TPU ops): within 1 ns an event
    for key, ns in dur.items():
        assert got[key] / 1000 == pytest.approx(ns, rel=1e-12, abs=count[key]), key
    # in file order, each event starts where ProfileData says (ns, from the line's timestamp)
    for r, (_, _, _, start_ns, _, _) in zip(rows, raw):
        assert r["start_ps"] / 1000 == pytest.approx(start_ns, abs=1)


def test_event_stats_are_columns_with_the_raw_values() -> None:
    raw = raw_events(GPU)
    rows = sql_json(GPU, "SELECT name, correlation_id, hlo_op, hlo_module FROM events ORDER BY event_id")
    with_op = 0
    for r, (_, _, name, _, _, stats) in zip(rows, raw):
        assert r["name"] == name
        assert r["correlation_id"] == stats.get("correlation_id")
        if "hlo_op" in stats:
            with_op += 1
            assert (r["hlo_op"], r["hlo_module"]) == (stats["hlo_op"], stats["hlo_module"])
    assert with_op > 1000
    # the stat metadata that only names strings (reference values) makes no column
    cols = {r["name"] for r in sql_json(GPU, "SELECT name FROM pragma_table_info('events') "
                                            "WHERE (SELECT count(*) FROM events) > 0")}
    assert {"correlation_id", "hlo_op", "kernel_details"} <= cols
    assert not any(c.startswith("$$") for c in cols)


def test_each_event_has_the_step_whose_window_holds_its_start() -> None:
    """The step of an event is the one whose [start, start + duration) holds its start; steps come
    from --json, whose times are whole nanoseconds, so events within 1 ns of a bound are left out."""
    bounds = [(s["step"], round(s["start_ms"] * 1e9), round((s["start_ms"] + s["duration_ms"]) * 1e9))
              for s in jaxprof_json("steps", GPU)["steps"]]
    rows = sql_json(GPU, "SELECT step, start_ps FROM events")
    checked = 0
    for r in rows:
        t = r["start_ps"]
        if any(abs(t - lo) <= 1000 or abs(t - hi) <= 1000 for _, lo, hi in bounds):
            continue
        want = next((num for num, lo, hi in bounds if lo <= t < hi), None)
        assert r["step"] == want, r
        checked += 1
    assert checked > 0.9 * len(rows)
    assert sum(r["step"] is not None for r in rows) > len(rows) // 2


def test_export_writes_a_database_python_reads(tmp_path: Path) -> None:
    out = tmp_path / "run.db"
    proc = run_jaxprof("export", GPU, "--format", "sqlite", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    assert [p.name for p in tmp_path.iterdir()] == ["run.db"]  # no temporary or journal file left
    db = sqlite3.connect(out)
    n_events = db.execute("SELECT count(*) FROM events").fetchone()[0]
    assert n_events == sum(1 for _ in raw_events(GPU))
    ops = db.execute("SELECT name, self_ms FROM ops").fetchall()
    assert ops == [(o["name"], o["self_ms"]) for o in jaxprof_json("ops", GPU, "--top", "0")["ops"]]
    db.close()
    # the file answers `jaxprof sql` as the profile does, every table alike
    assert assert_tables_equal(GPU, out) > 0
    assert sql_json(out, "SELECT count(*) AS n FROM events") == [{"n": n_events}]


def test_export_refuses_to_overwrite_its_input_and_the_sql_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    assert run_jaxprof("export", GPU, "--format", "sqlite", "-o", db).returncode == 0
    before = db.read_bytes()
    proc = run_jaxprof("sql", db, "DROP TABLE ops")
    assert proc.returncode == 2 and "readonly" in proc.stderr
    assert db.read_bytes() == before
    proc = run_jaxprof("export", GPU, "--format", "sqlite", "--steps", "1:2", "-o", tmp_path / "x.db")
    assert proc.returncode == 2 and "select a window or steps with SQL" in proc.stderr


def test_bad_sql_and_bad_input_are_clear_errors(tmp_path: Path) -> None:
    proc = run_jaxprof("sql", GPU, "SELECT nope FROM ops")
    assert proc.returncode == 2 and "no such column: nope" in proc.stderr
    cut = tmp_path / "cut.xplane.pb"
    import gzip
    cut.write_bytes(gzip.open(GPU).read()[:5000])
    for bad in [cut] + [p for p in ALL_REAL if p.name.startswith("mangled")]:
        proc = run_jaxprof("sql", bad, "SELECT 1")
        assert proc.returncode == 2 and str(bad) in proc.stderr and "byte" in proc.stderr, proc.stderr


def test_csv_text_and_query_files(tmp_path: Path) -> None:
    q = tmp_path / "top.sql"
    q.write_text("-- the three slowest ops\nSELECT name, self_ms FROM ops ORDER BY self_ms DESC LIMIT 3;\n")
    csv = run_jaxprof("sql", GPU, "-f", q, "--csv")
    assert csv.returncode == 0, csv.stderr
    lines = csv.stdout.splitlines()
    top = sorted(jaxprof_json("ops", GPU, "--top", "0")["ops"], key=lambda o: -o["self_ms"])[:3]
    assert lines[0] == "name,self_ms" and len(lines) == 4
    assert [ln.split(",")[0] for ln in lines[1:]] == [o["name"] for o in top]
    text = run_jaxprof("sql", GPU, "-f", q)
    assert text.stdout.splitlines()[0].split() == ["name", "self_ms"] and "(3 rows)" in text.stdout
    piped = subprocess.run([str(JAXPROF_BIN), "sql", str(GPU), "--json"], input="SELECT 1 AS one;",
                           capture_output=True, text=True, timeout=60)
    assert json.loads(piped.stdout) == [{"one": 1}]


def test_the_prompt_runs_each_statement_as_it_ends() -> None:
    fd, tty = pty.openpty()  # the prompt shows only on a terminal
    proc = subprocess.Popen([str(JAXPROF_BIN), "sql", str(CPU_SMALL)], stdin=tty, stdout=tty, stderr=tty)
    os.close(tty)
    out = b""

    def read_until(token: bytes) -> bytes:
        nonlocal out
        deadline = time.time() + 60
        while token not in out and time.time() < deadline:
            if select.select([fd], [], [], 1)[0]:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    break
        assert token in out, out.decode(errors="replace")
        return out

    read_until(b"jaxprof> ")
    os.write(fd, b"SELECT count(*) AS n\n")
    read_until(b"...> ")
    os.write(fd, b"FROM events;\n")
    n = len(raw_events(CPU_SMALL))
    read_until(b"(1 row)")
    assert str(n).encode() in out
    os.write(fd, b".tables\n")
    read_until(b"step_summary")
    os.write(fd, b"\x04")
    assert proc.wait(timeout=60) == 0
    os.close(fd)


def test_the_documented_example_queries_answer_on_a_real_capture() -> None:
    doc = (HERE.parents[1] / "docs" / "sql.md").read_text()
    queries = doc.split("```sql\n")[1:]
    assert len(queries) >= 4
    for q in (block.split("```")[0] for block in queries):
        rows = sql_json(GPU, q)
        assert rows, q
    # the time between two events: each step's dispatch to its first kernel, never negative
    first = sql_json(GPU, queries[1].split("```")[0])
    assert all(r["launch_us"] >= 0 for r in first)


def test_python_opens_the_same_database(tmp_path: Path) -> None:
    import jaxprof

    db = jaxprof.sql(GPU)
    assert db.query("SELECT * FROM ops") == sql_json(GPU, "SELECT * FROM ops")
    assert db.query("SELECT 1 AS a; SELECT count(*) AS n FROM events") == [{"n": len(raw_events(GPU))}]
    frame = db.to_pandas("SELECT name, self_ms FROM ops ORDER BY self_ms DESC LIMIT 3")
    assert list(frame["name"]) == [r["name"] for r in sql_json(GPU, "SELECT name FROM ops ORDER BY self_ms DESC LIMIT 3")]
    with pytest.raises(ValueError, match="no such column: nope"):
        db.query("SELECT nope FROM ops")
    out = tmp_path / "run.db"
    assert run_jaxprof("export", GPU, "--format", "sqlite", "-o", out).returncode == 0
    assert jaxprof.sql(out).query("SELECT count(*) AS n FROM steps") == [{"n": 4}]
