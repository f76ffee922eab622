"""Host summaries of every real capture layout (others' captures beside the project, and our H200
captures in tests/data/gpu): each capture filed as two hosts of a run and summarised; `jaxprof
hosts` from the summaries equals `jaxprof hosts --full` from the files, key by key."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import REAL_CAPTURES, run_jaxprof
from test_pod import assert_same_merge, hosts_json

REAL = REAL_CAPTURES
GPU = Path(__file__).resolve().parents[1] / "data" / "gpu"
CAPTURES = sorted([*GPU.glob("*.xplane.pb.gz"), *(p for p in REAL.glob("*.xplane.pb.gz") if not p.name.startswith("mangled")),
                   *REAL.glob("*.trace.json.gz")], key=lambda p: p.name)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_every_layout_merges_from_summaries_as_from_its_files(capture, tmp_path):
    suffix = ".trace.json.gz" if capture.name.endswith(".trace.json.gz") else ".xplane.pb.gz"
    for host in ("a", "b"):
        os.link(capture, tmp_path / f"{host}{suffix}")
    res = run_jaxprof("summarize", tmp_path)
    assert res.returncode == 0, res.stderr
    assert_same_merge(hosts_json(tmp_path), hosts_json(tmp_path, "--full"))
    for f in tmp_path.glob("*.jaxprof-summary.json"):
        assert f.stat().st_size < 512 * 1024, (f, f.stat().st_size)
