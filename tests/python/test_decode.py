"""libjaxprof's XSpace decoder against JAX's own reader, on real captures and on bad files."""
from __future__ import annotations

import gzip
from collections import defaultdict

import jax
import pytest

import jaxprof

from conftest import only_xplane
from decoder_oracle import xplane_lines


def reference_lines(path) -> dict[tuple[str, str], tuple[int, float]]:
    """(plane, line) -> (events, total duration ns) computed with jax.profiler.ProfileData."""
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for plane in jax.profiler.ProfileData.from_file(str(path)).planes:
        for line in plane.lines:
            for event in line.events:
                out[(plane.name, line.name)][0] += 1
                out[(plane.name, line.name)][1] += event.duration_ns
    return {k: (int(v[0]), v[1]) for k, v in out.items()}


def ours(path) -> dict[tuple[str, str], tuple[int, float]]:
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for plane, line, _id, n_events, total_ps in xplane_lines(str(path)):
        out[(plane, line)][0] += n_events
        out[(plane, line)][1] += total_ps / 1e3
    return {k: (int(v[0]), v[1]) for k, v in out.items() if v[0]}


@pytest.fixture
def captured(tmp_path, step_fn, w0):
    with jaxprof.Profiler(tmp_path, start_step=1, num_steps=3) as prof:
        for i in range(5):
            with prof.step(i):
                step_fn(w0)
    return only_xplane(tmp_path)


def test_every_line_matches_jax_reader(captured):
    expected = reference_lines(captured)
    got = ours(captured)
    assert set(got) == set(expected)
    for key, (n, total_ns) in expected.items():
        assert got[key][0] == n, key
        assert got[key][1] == pytest.approx(total_ns, rel=1e-3, abs=1e-3), key
    assert sum(n for n, _ in got.values()) >= 20  # a real capture, not an empty file


def test_gzipped_xplane_decodes_the_same(captured, tmp_path):
    gz = tmp_path / "copy.xplane.pb.gz"
    gz.write_bytes(gzip.compress(captured.read_bytes()))
    assert ours(gz) == ours(captured)


def test_truncated_file_names_file_and_offset(captured, tmp_path):
    cut = tmp_path / "cut.xplane.pb"
    data = captured.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"cut\.xplane\.pb: truncated .* at byte \d+"):
        xplane_lines(str(cut))
    with pytest.raises(FileNotFoundError, match="missing.xplane.pb"):
        xplane_lines(str(tmp_path / "missing.xplane.pb"))
