"""benchmarks/floor.c, the floor `jaxprof report` is measured against (issue 34): it must walk the
whole file, so its event count is JAX's own (jax.profiler.ProfileData), and a damaged file must stop
it with exit 2 and the byte offset, not a wrong count."""
from __future__ import annotations

import gzip
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL_CAPTURES
from raw_events import raw_planes

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import gen_xplane  # noqa: E402

_spec = importlib.util.spec_from_file_location("floor_speed", BENCH / "floor_speed.py")
floor_speed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(floor_speed)

REAL = "mi300_jax08_attention.xplane.pb.gz"  # a real GPU capture: metadata stats, many planes


@pytest.fixture(scope="module")
def floor(tmp_path_factory) -> Path:
    return floor_speed.build_floor(tmp_path_factory.mktemp("floor") / "floor")


def run_floor(floor: Path, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(floor), str(path)], capture_output=True, text=True, timeout=60)


def jax_events(path: Path) -> int:
    return sum(1 for plane in raw_planes(path) for line in plane.lines for _ in line.events)


def test_floor_counts_every_event_of_a_real_capture(floor):
    path = REAL_CAPTURES / REAL
    proc = run_floor(floor, path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["events"] == jax_events(path)
    assert out["bytes"] == path.stat().st_size
    assert out["stats"] > 0 and out["seconds"] > 0


def test_floor_counts_every_event_of_a_generated_profile(floor, tmp_path):
    path = tmp_path / "gen.xplane.pb"
    info = gen_xplane.generate(path, "gpu", steps=20)
    proc = run_floor(floor, path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["events"] == jax_events(path) == info["total_events"]


def test_floor_stops_on_a_truncated_file_with_its_offset(floor, tmp_path):
    data = gzip.open(REAL_CAPTURES / REAL).read()
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(data[: len(data) // 2])
    proc = run_floor(floor, cut)
    assert proc.returncode == 2 and proc.stdout == ""
    m = re.search(r"malformed at byte (\d+)", proc.stderr)
    assert m and int(m.group(1)) < len(data) // 2, proc.stderr
