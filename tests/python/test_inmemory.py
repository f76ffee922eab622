"""Profiles as data in memory (issue 35, items 2 and 3): ``jaxprof.profile()`` captures with no file
written and analyses in a child process; ``jaxprof.load(bytes)``; every table as a DataFrame."""
from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import jax
import pandas as pd
import pytest

import jaxprof
from jaxprof import _jax
from conftest import only_xplane, read_xplane

GPU = Path(__file__).resolve().parent.parent / "data" / "gpu" / "h200_transformer_nocb.xplane.pb.gz"


def capture(step_fn, w0, steps: int = 4) -> jaxprof.CapturedProfile:
    with jaxprof.profile() as prof:
        w = w0
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                w = step_fn(w)
        w.block_until_ready()
    return prof


def test_a_capture_in_memory_writes_nothing_and_equals_its_saved_file(tmp_path, step_fn, w0, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prof = capture(step_fn, w0)
    assert prof.xspace and list(tmp_path.iterdir()) == []  # nothing on disk
    assert not _jax.trace_active()
    saved = prof.save(tmp_path / "logs")
    assert saved == only_xplane(tmp_path / "logs") and saved.read_bytes() == prof.xspace
    assert read_xplane(saved).step_nums == [0, 1, 2, 3]  # JAX's own reader: the capture is whole
    from_file, from_bytes = jaxprof.load(saved), jaxprof.load(prof.xspace)
    for table in ("ops", "steps", "scopes", "findings", "devices"):
        child = prof.table(table)  # analysed in a child process, from standard input
        assert child == from_bytes.table(table) == from_file.table(table), table
    assert [s.step for s in prof.steps()] == [0, 1, 2, 3]
    text = prof.report()
    assert text.startswith(f"jaxprof report: {saved.name.split('.')[0]}") and "Top ops by self time" in text


def test_a_trace_already_running_is_a_warning_and_the_block_still_runs(tmp_path, step_fn, w0, caplog):
    jax.profiler.start_trace(str(tmp_path / "theirs"))
    try:
        with caplog.at_level(logging.WARNING, logger="jaxprof"):
            with jaxprof.profile() as prof:
                w = step_fn(w0)
        assert w.shape == (64, 64)
        assert prof.xspace is None and prof.ops() == [] and prof.report() == ""
        assert any("already active" in r.getMessage() for r in caplog.records)
        assert _jax.trace_active()  # theirs goes on
    finally:
        jax.profiler.stop_trace()


def test_a_crashing_analysis_is_one_warning_and_empty_results(tmp_path, step_fn, w0, caplog, monkeypatch):
    prof = capture(step_fn, w0, steps=2)
    crash = tmp_path / "jaxprof"
    crash.write_text("#!/bin/sh\ncat >/dev/null\nkill -SEGV $$\n")
    crash.chmod(0o755)
    monkeypatch.setenv("JAXPROF_BIN", str(crash))
    with caplog.at_level(logging.WARNING, logger="jaxprof"):
        assert prof.ops() == [] and prof.findings() == [] and prof.step_summary() == {}
    warned = [r.getMessage() for r in caplog.records if "in-memory capture" in r.getMessage()]
    assert warned and "training continues" in warned[0]


def test_load_refuses_cut_bytes_naming_the_offset() -> None:
    import gzip
    data = gzip.open(GPU).read()
    with pytest.raises(ValueError, match="byte"):
        jaxprof.load(data[: len(data) // 3])
    assert [o.name for o in jaxprof.load(data).ops()] == [o.name for o in jaxprof.load(GPU).ops()]


def same(cell, value) -> bool:
    if value is None:
        return cell is pd.NA or (isinstance(cell, float) and math.isnan(cell))
    return cell == value


def test_every_table_is_a_typed_dataframe_equal_to_its_rows() -> None:
    p = jaxprof.load(GPU)
    frames = p.dataframes()
    assert set(frames) == set(jaxprof.Profile.TABLES)
    nonempty = 0
    for name, df in frames.items():
        rows = p.table(name)
        assert len(df) == len(rows), name
        if not rows:
            continue
        nonempty += 1
        assert list(df.columns) == rows[0].keys(), name
        for i, row in enumerate(rows):
            for key in row.keys():
                assert same(df[key].iloc[i], getattr(row, key)), (name, i, key)
    assert nonempty >= 12
    ops = frames["ops"]
    assert (str(ops["name"].dtype), str(ops["count"].dtype), str(ops["self_ms"].dtype), str(ops["remat"].dtype)) == \
        ("string", "Int64", "Float64", "boolean")
    assert ops["self_ms"].sum() == pytest.approx(sum(o.self_ms for o in p.ops()))


def test_pandas_is_imported_only_when_a_dataframe_is_asked_for() -> None:
    code = ("import sys, jaxprof; p = jaxprof.load(sys.argv[1]); p.ops(); p.steps(); "
            "assert 'pandas' not in sys.modules; p.to_pandas('ops'); assert 'pandas' in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code, str(GPU)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr


def test_without_the_executable_the_extension_answers_in_the_child(step_fn, w0, monkeypatch, tmp_path):
    prof = capture(step_fn, w0, steps=2)
    want = jaxprof.load(prof.xspace)
    monkeypatch.setenv("JAXPROF_BIN", str(tmp_path / "no-such-jaxprof"))  # python -m jaxprof._isolated then
    assert prof.ops(top=1, sort="count") == want.ops(top=1, sort="count")
    assert prof.steps() == want.steps()
