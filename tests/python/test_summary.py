"""`jaxprof report --summary` (issue 35, item 5): the compact JSON for scripts and assistants holds
the report's own numbers (step summary, KPIs, every finding with its evidence, the top ops and
scopes), a few kB on every real capture."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REAL_CAPTURES, jaxprof_json, run_jaxprof

HERE = Path(__file__).resolve().parent
CAPTURES = [HERE.parent / "data" / "cpu_small.xplane.pb.gz", *sorted((HERE.parent / "data" / "gpu").glob("*.gz"))] + \
    ([p for p in sorted(REAL_CAPTURES.glob("*.xplane.pb.gz")) if not p.name.startswith("mangled")]
     if REAL_CAPTURES.is_dir() else [])


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_the_summary_holds_the_reports_own_numbers(path: Path) -> None:
    proc = run_jaxprof("report", path, "--summary")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout) < 16_000  # compact whatever the profile
    s = json.loads(proc.stdout)
    full = jaxprof_json("report", path, "--top", "0")
    assert s["section"] == "summary"
    for key in ("path", "platform", "hosts", "events", "span_ms", "device_busy_ms", "device_idle_pct",
                "capture_health", "step_summary", "kpis", "findings"):
        assert s[key] == full[key], key
    assert s["devices"] == len(full["devices"])
    cols = ["name", "category", "count", "self_ms", "pct_time", "bound_by", "roof_pct", "source"]
    ops = sorted(jaxprof_json("ops", path, "--top", "0")["ops"], key=lambda o: -o["self_ms"])
    assert [o["self_ms"] for o in s["ops"]] == [o["self_ms"] for o in ops[:5]]
    assert all(list(o) == cols for o in s["ops"])
    scopes = sorted(jaxprof_json("scopes", path, "--top", "0")["scopes"], key=lambda r: -r["self_ms"])
    assert [r["self_ms"] for r in s["scopes"]] == [r["self_ms"] for r in scopes[:5]]


def test_the_summary_is_reports_alone() -> None:
    proc = run_jaxprof("ops", CAPTURES[0], "--summary")
    assert proc.returncode == 2 and "--summary" in proc.stderr
