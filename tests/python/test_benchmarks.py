"""The benchmark scripts run and print their tables (timings are not checked, only that they run)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_capture_overhead_prints_both_tables():
    proc = subprocess.run([sys.executable, str(BENCH / "capture_overhead.py"), "--calls", "50", "--repeats", "2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "### Tracing off" in proc.stdout and "### Tracing on" in proc.stdout
    for row in ("| bare call |", "| jaxprof.annotate (with) |", "| Profiler.step() idle |"):
        assert row in proc.stdout


def test_analysis_speed_prints_its_table():
    proc = subprocess.run([sys.executable, str(BENCH / "analysis_speed.py"), "--steps", "20", "--repeats", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "| jaxprof (C): load + all analyses + JSON |" in proc.stdout
    assert "| jax.profiler.ProfileData + Python op sums |" in proc.stdout


def test_export_speed_prints_its_table_and_both_paths_keep_every_event():
    proc = subprocess.run([sys.executable, str(BENCH / "export_speed.py"), "--steps", "20", "--repeats", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "| JAX trace JSON + perfetto rewrite |" in proc.stdout
    assert "| `jaxprof export` (Chrome JSON, gzip 1) |" in proc.stdout
    assert "jaxprof wrote every one of the" in proc.stdout


def test_multihost_scaling_prints_its_tables():
    proc = subprocess.run([sys.executable, str(BENCH / "multihost_scaling.py"), "--pair-size", "0.3", "--small-size", "0.2",
                           "--counts", "1,2,4", "--repeats", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "### Two host files" in proc.stdout and "| cpu | 0 |" in proc.stdout and "| gpu | 0 |" in proc.stdout
    assert "| 4 | 1 |" in proc.stdout and "1,024-host pod on 64 cores" in proc.stdout


def test_sql_speed_prints_its_table():
    proc = subprocess.run([sys.executable, str(BENCH / "sql_speed.py"), "--size", "0.3", "--repeats", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "## SQL export" in proc.stdout and "| cpu | 0 MB |" in proc.stdout and "| gpu | 0 MB |" in proc.stdout
