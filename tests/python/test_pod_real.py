"""Host summaries of every real capture layout (others' captures beside the project, and our H200
captures in tests/data/gpu): each capture filed as two hosts of a run and summarised; `jaxprof
hosts` from the summaries equals `jaxprof hosts --full` from the files, key by key."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import REAL_CAPTURES, run_jaxprof

REAL = REAL_CAPTURES
GPU = Path(__file__).resolve().parents[1] / "data" / "gpu"
CAPTURES = sorted([*GPU.glob("*.xplane.pb.gz"), *(p for p in REAL.glob("*.xplane.pb.gz") if not p.name.startswith("mangled")),
                   *REAL.glob("*.trace.json.gz")], key=lambda p: p.name)
SAME = ("clock_method", "host_stats", "host_steps", "stragglers", "hosts", "platform", "events", "span_ms",
        "device_busy_ms", "device_idle_pct", "capture_health")


def hosts_json(path: Path, *extra: str) -> dict:
    res = run_jaxprof("hosts", path, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_every_layout_merges_from_summaries_as_from_its_files(capture, tmp_path):
    suffix = ".trace.json.gz" if capture.name.endswith(".trace.json.gz") else ".xplane.pb.gz"
    for host in ("a", "b"):
        os.link(capture, tmp_path / f"{host}{suffix}")
    res = run_jaxprof("summarize", tmp_path)
    assert res.returncode == 0, res.stderr
    merged, raw = hosts_json(tmp_path), hosts_json(tmp_path, "--full")
    assert merged["summarized_hosts"] == 2 and raw["summarized_hosts"] == 0
    for key in SAME:
        assert merged[key] == raw[key], key
    strip = lambda devs: [{k: v for k, v in d.items() if k != "collective_wait_ms"} for d in devs]
    assert strip(merged["devices"]) == strip(raw["devices"])
    for host, rows in merged["host_ops"].items():
        kept = {(r["module"], r["name"], r["device"], r["program_id"]) for r in rows}
        assert len(rows) == min(50, len(raw["host_ops"][host]))
        assert rows == [r for r in raw["host_ops"][host] if (r["module"], r["name"], r["device"], r["program_id"]) in kept]
    for f in tmp_path.glob("*.jaxprof-summary.json"):
        assert f.stat().st_size < 512 * 1024, (f, f.stat().st_size)
