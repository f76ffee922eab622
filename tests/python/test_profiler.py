"""The step scheduler, proved on real JAX CPU captures by reading back what was written."""
from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxprof
from jaxprof import _jax

from conftest import only_xplane, read_xplane, step_dirs, xplanes


def run_loop(prof: jaxprof.Profiler, step_fn, w, steps, *, sleep_s: float = 0.0):
    for i in steps:
        with prof.step(i):
            w = step_fn(w)
            if sleep_s:
                time.sleep(sleep_s)
    return w


def test_start_and_num_steps_capture_exactly_those_steps(tmp_path, step_fn, w0):
    with jaxprof.Profiler(tmp_path, start_step=3, num_steps=4) as prof:
        run_loop(prof, step_fn, w0, range(12))
    assert step_dirs(tmp_path) == ["step_00000003"]
    runs = jaxprof.find_runs(tmp_path)
    assert len(runs) == 1
    assert runs[0].path.parent == tmp_path / "step_00000003" / "plugins" / "profile"
    content = read_xplane(only_xplane(tmp_path))
    assert content.step_nums == [3, 4, 5, 6]
    assert "jit_train_step" in content.hlo_modules
    assert prof.captures[0].steps == [3, 4, 5, 6]
    assert prof.captures[0].reason == "steps"


def test_every_n_steps_with_max_profiles(tmp_path, step_fn, w0):
    with jaxprof.Profiler(tmp_path, start_step=2, num_steps=2, every_n_steps=5, max_profiles=3) as prof:
        run_loop(prof, step_fn, w0, range(30))
    assert step_dirs(tmp_path) == ["step_00000002", "step_00000007", "step_00000012"]
    for start in (2, 7, 12):
        content = read_xplane(only_xplane(tmp_path / f"step_{start:08d}"))
        assert content.step_nums == [start, start + 1]
    assert len(jaxprof.find_runs(tmp_path)) == 3


def test_every_n_steps_without_cap_keeps_capturing(tmp_path, step_fn, w0):
    with jaxprof.Profiler(tmp_path, start_step=0, num_steps=1, every_n_steps=4) as prof:
        run_loop(prof, step_fn, w0, range(10))
    assert step_dirs(tmp_path) == ["step_00000000", "step_00000004", "step_00000008"]
    assert [c.steps for c in prof.captures] == [[0], [4], [8]]


def test_duration_ends_capture_at_a_step_boundary(tmp_path, step_fn, w0):
    with jaxprof.Profiler(tmp_path, start_step=1, num_steps=50, duration_ms=100) as prof:
        run_loop(prof, step_fn, w0, range(20), sleep_s=0.03)
    (capture,) = prof.captures
    assert capture.reason == "duration"
    # 30 ms steps reach 100 ms after at most 4 steps; the capture ends at that boundary.
    assert 1 <= len(capture.steps) <= 4
    assert capture.steps == list(range(1, 1 + len(capture.steps)))
    assert read_xplane(only_xplane(tmp_path)).step_nums == capture.steps


def test_duration_alone_bounds_capture(tmp_path, step_fn, w0):
    with jaxprof.Profiler(tmp_path, start_step=2, duration_ms=50) as prof:
        run_loop(prof, step_fn, w0, range(12), sleep_s=0.02)
    (capture,) = prof.captures
    assert capture.reason == "duration"
    assert 1 <= len(capture.steps) <= 3
    assert capture.steps[0] == 2


def test_steps_without_numbers_are_counted_from_zero(tmp_path, step_fn, w0):
    prof = jaxprof.Profiler(tmp_path, start_step=2, num_steps=2)
    w = w0
    for _ in range(5):
        prof.begin_step()
        w = step_fn(w)
        prof.end_step()
    prof.close()
    assert read_xplane(only_xplane(tmp_path)).step_nums == [2, 3]


def test_skip_first_leaves_early_steps_alone(tmp_path, step_fn, w0):
    # Resumed from a checkpoint at step 100: the first two steps seen recompile and are skipped.
    with jaxprof.Profiler(tmp_path, start_step=100, num_steps=1, every_n_steps=1, max_profiles=2,
                          skip_first=2) as prof:
        run_loop(prof, step_fn, w0, range(100, 110))
    assert step_dirs(tmp_path) == ["step_00000102", "step_00000103"]


def test_repeated_step_numbers_do_not_recapture(tmp_path, step_fn, w0):
    with jaxprof.Profiler(tmp_path, start_step=1, num_steps=1) as prof:
        for _epoch in range(3):
            run_loop(prof, step_fn, w0, range(3))
    assert len(prof.captures) == 1


def test_capture_async_starts_at_next_step_and_ignores_second_request(tmp_path, step_fn, w0, caplog):
    prof = jaxprof.Profiler(tmp_path, start_step=10_000, num_steps=3)
    w = run_loop(prof, step_fn, w0, range(4))
    assert prof.capture_async(num_steps=2) is True
    with caplog.at_level(logging.INFO, logger="jaxprof"):
        assert prof.capture_async() is False  # already armed
        w = run_loop(prof, step_fn, w, range(4, 5))
        assert prof.capturing
        assert prof.capture_async() is False  # already running
        run_loop(prof, step_fn, w, range(5, 8))
    prof.close()
    assert step_dirs(tmp_path) == ["step_00000004"]
    assert read_xplane(only_xplane(tmp_path)).step_nums == [4, 5]
    assert sum("capture_async ignored" in r.message for r in caplog.records) == 2


def test_logs_one_line_per_capture(tmp_path, step_fn, w0, caplog):
    with caplog.at_level(logging.INFO, logger="jaxprof"):
        with jaxprof.Profiler(tmp_path, start_step=1, num_steps=2, every_n_steps=3, max_profiles=2) as prof:
            run_loop(prof, step_fn, w0, range(8))
    lines = [r.message for r in caplog.records if r.message.startswith("captured steps")]
    assert len(lines) == 2
    assert lines[0].startswith("captured steps 1-2 (2 steps, mean ")
    assert str(prof.captures[0].run_dir) in lines[0]
    assert lines[1].startswith("captured steps 4-5 (2 steps")


def test_block_on_edges_keeps_last_steps_device_work(tmp_path, step_fn, w0):
    @jax.jit
    def only_in_last_step(x):
        for _ in range(100):  # ~0.1 s of CPU work: still running when the step ends
            x = jnp.sin(x @ x.T) / 64
        return x

    big = jnp.ones((256, 256))
    only_in_last_step(big).block_until_ready()
    pending = None
    with jaxprof.Profiler(tmp_path, start_step=1, num_steps=2, block_on_edges=True) as prof:
        for i in range(4):
            with prof.step(i):
                w0 = step_fn(w0)
                if i == 2:
                    pending = only_in_last_step(big)  # dispatched, never blocked on by the loop
    assert pending is not None
    assert "jit_only_in_last_step" in read_xplane(only_xplane(tmp_path)).hlo_modules


def test_outside_trace_active_skips_capture_with_one_warning(tmp_path, step_fn, w0, caplog):
    outside = tmp_path / "outside"
    jax.profiler.start_trace(str(outside))
    try:
        with caplog.at_level(logging.WARNING, logger="jaxprof"):
            with jaxprof.Profiler(tmp_path / "prof", start_step=1, num_steps=2) as prof:
                w = run_loop(prof, step_fn, w0, range(5))
    finally:
        jax.profiler.stop_trace()
    assert w.shape == (64, 64)  # training went on
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "already active" in warnings[0].message
    assert prof.captures == []
    assert xplanes(tmp_path / "prof") == []
    assert len(xplanes(outside)) == 1  # the user's own trace is untouched
    assert not _jax.trace_active()


def test_unwritable_log_dir_warns_and_training_continues(tmp_path, step_fn, w0, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger="jaxprof"):
        with jaxprof.Profiler(blocker / "logs", start_step=1, num_steps=2, every_n_steps=3) as prof:
            w = run_loop(prof, step_fn, w0, range(8))
    assert w.shape == (64, 64)
    assert prof.captures == []
    assert any("could not start profiler trace" in r.message for r in caplog.records)
    assert not _jax.trace_active()


def test_failing_stop_is_logged_and_next_capture_works(tmp_path, step_fn, w0, caplog):
    prof = jaxprof.Profiler(tmp_path, start_step=1, num_steps=2, every_n_steps=4)
    with caplog.at_level(logging.WARNING, logger="jaxprof"):
        w = run_loop(prof, step_fn, w0, range(2))
        assert prof.capturing
        # The capture's directory vanishes under it (as on a full or unmounted disk).
        victim = tmp_path / "step_00000001"
        for p in sorted(victim.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        victim.rmdir()
        victim.write_text("now a file")
        w = run_loop(prof, step_fn, w, range(2, 8))
    prof.close()
    assert any("could not stop profiler trace" in r.message for r in caplog.records)
    assert [c.run_dir is None for c in prof.captures] == [True, False]
    assert read_xplane(only_xplane(tmp_path / "step_00000005")).step_nums == [5, 6]


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_exception_inside_step_stops_trace_and_reraises(tmp_path, step_fn, w0, error):
    prof = jaxprof.Profiler(tmp_path, start_step=1, num_steps=5)
    w = w0
    with pytest.raises(error):
        for i in range(10):
            with prof.step(i):
                w = step_fn(w)
                if i == 3:
                    raise error("user code failed")
    assert not prof.capturing and not _jax.trace_active()
    (capture,) = prof.captures
    assert capture.reason == "exception"
    assert read_xplane(only_xplane(tmp_path)).step_nums == [1, 2, 3]
    # The loop can go on afterwards, and profiling still works.
    jax.profiler.start_trace(str(tmp_path / "again"))
    jax.profiler.stop_trace()


def test_close_mid_capture_writes_files(tmp_path, step_fn, w0):
    prof = jaxprof.Profiler(tmp_path, start_step=1, num_steps=10)
    run_loop(prof, step_fn, w0, range(4))
    assert prof.capturing
    prof.close()
    prof.close()  # idempotent
    assert not _jax.trace_active()
    assert prof.captures[0].reason == "close"
    assert read_xplane(only_xplane(tmp_path)).step_nums == [1, 2, 3]


def test_interpreter_exit_stops_capture(tmp_path):
    script = f"""
import jax, jax.numpy as jnp, jaxprof
prof = jaxprof.Profiler({str(tmp_path)!r}, start_step=0, num_steps=100)
f = jax.jit(lambda x: x * 2)
for i in range(3):
    with prof.step(i):
        f(jnp.ones(4)).block_until_ready()
print("exiting mid-capture", prof.capturing)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "exiting mid-capture True" in proc.stdout
    assert read_xplane(only_xplane(tmp_path)).step_nums == [0, 1, 2]


def test_disabled_profiler_captures_nothing(tmp_path, step_fn, w0):
    with jaxprof.Profiler(tmp_path, start_step=0, num_steps=2, enabled=False) as prof:
        run_loop(prof, step_fn, w0, range(4))
    assert prof.captures == [] and not any(tmp_path.iterdir())


def test_two_profilers_on_one_dir_never_collide(tmp_path, step_fn, w0):
    for _ in range(2):
        with jaxprof.Profiler(tmp_path, start_step=1, num_steps=1) as prof:
            run_loop(prof, step_fn, w0, range(3))
    assert step_dirs(tmp_path) == ["step_00000001", "step_00000001-2"]


@pytest.mark.parametrize("kwargs, field", [
    (dict(num_steps=0), "num_steps"),
    (dict(start_step=-1), "start_step"),
    (dict(every_n_steps=2, num_steps=3), "every_n_steps"),
    (dict(max_profiles=0, every_n_steps=2), "max_profiles"),
    (dict(host_trace_level=7), "host_trace_level"),
    (dict(duration_ms=-5), "duration_ms"),
    (dict(start_step="3"), "start_step"),
])
def test_invalid_arguments_name_the_field(tmp_path, kwargs, field):
    with pytest.raises(ValueError, match=field):
        jaxprof.Profiler(tmp_path, **kwargs)


def test_is_scheduled_matches_the_windows(tmp_path):
    prof = jaxprof.Profiler(tmp_path, start_step=5, num_steps=2, every_n_steps=10, max_profiles=2)
    assert [s for s in range(40) if prof.is_scheduled(s)] == [5, 6, 15, 16]
    prof.close()


def test_failed_start_does_not_use_up_max_profiles(tmp_path, step_fn, w0, caplog):
    # A trace of the user's own blocks the first window; the budget of one capture is kept for later.
    prof = jaxprof.Profiler(tmp_path / "prof", start_step=0, num_steps=1, every_n_steps=3, max_profiles=1)
    jax.profiler.start_trace(str(tmp_path / "outside"))
    try:
        run_loop(prof, step_fn, w0, range(2))
    finally:
        jax.profiler.stop_trace()
    run_loop(prof, step_fn, w0, range(2, 10))
    prof.close()
    assert step_dirs(tmp_path / "prof") == ["step_00000003"]
