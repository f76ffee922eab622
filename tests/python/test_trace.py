"""jaxprof.trace: scoped capture, forgotten block_until_ready, faults."""
from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import pytest

import jaxprof
from jaxprof import _jax

from conftest import only_xplane, read_xplane, xplanes


@jax.jit
def slow(x):
    for _ in range(100):
        x = jnp.sin(x @ x.T) / 64
    return x


def test_trace_writes_a_run_with_the_named_block(tmp_path, step_fn, w0):
    with jaxprof.trace(tmp_path, name="my_block") as t:
        step_fn(w0).block_until_ready()
    assert t.run_dir is not None and t.run_dir.parent == tmp_path / "plugins" / "profile"
    content = read_xplane(only_xplane(tmp_path))
    assert "my_block" in content.names
    assert "jit_train_step" in content.hlo_modules


def test_forgotten_block_until_ready_still_captures_device_work(tmp_path):
    big = jnp.ones((256, 256))
    slow(big).block_until_ready()
    with jaxprof.trace(tmp_path):
        pending = slow(big)  # never blocked on inside the block
    assert pending.shape == (256, 256)
    assert "jit_slow" in read_xplane(only_xplane(tmp_path)).hlo_modules


def test_trace_as_decorator_and_aliases(tmp_path, step_fn, w0):
    @jaxprof.trace(tmp_path / "deco")
    def work():
        return step_fn(w0).block_until_ready()

    work()
    work()
    assert len(jaxprof.find_runs(tmp_path / "deco")) >= 1  # two calls in one second share JAX's run name
    with jaxprof.profile_trace(tmp_path / "alias", name="aliased"):
        step_fn(w0).block_until_ready()
    assert "aliased" in read_xplane(only_xplane(tmp_path / "alias")).names
    assert jaxprof.ProfileContext is jaxprof.trace


def test_exception_inside_trace_stops_cleanly_and_reraises(tmp_path, step_fn, w0):
    with pytest.raises(RuntimeError, match="boom"):
        with jaxprof.trace(tmp_path, name="failing"):
            step_fn(w0).block_until_ready()
            raise RuntimeError("boom")
    assert not _jax.trace_active()
    assert "failing" in read_xplane(only_xplane(tmp_path)).names


def test_outside_trace_active_runs_block_untraced(tmp_path, step_fn, w0, caplog):
    jax.profiler.start_trace(str(tmp_path / "outside"))
    try:
        with caplog.at_level(logging.WARNING, logger="jaxprof"):
            with jaxprof.trace(tmp_path / "inner") as t:
                result = step_fn(w0)
    finally:
        jax.profiler.stop_trace()
    assert result.shape == (64, 64)
    assert t.run_dir is None
    assert any("already active" in r.message for r in caplog.records)
    assert xplanes(tmp_path / "inner") == [] and len(xplanes(tmp_path / "outside")) == 1


def test_unwritable_dir_warns(tmp_path, step_fn, w0, caplog):
    (tmp_path / "file").write_text("x")
    with caplog.at_level(logging.WARNING, logger="jaxprof"):
        with jaxprof.trace(tmp_path / "file" / "sub") as t:
            step_fn(w0).block_until_ready()
    assert t.run_dir is None
    assert any("could not start profiler trace" in r.message for r in caplog.records)


def test_perfetto_file_is_written_without_blocking(tmp_path, step_fn, w0):
    with jaxprof.trace(tmp_path, perfetto=True) as t:
        step_fn(w0).block_until_ready()
    assert t.run_dir is not None
    assert (t.run_dir / "perfetto_trace.json.gz").stat().st_size > 0


def test_options_dict_is_validated_and_applied(tmp_path, step_fn, w0):
    with pytest.raises(ValueError, match="unknown ProfileOptions field .no_such_field."):
        jaxprof.trace(tmp_path, options={"no_such_field": 1})
    for level in (0, 2):
        with jaxprof.trace(tmp_path / str(level), options={"host_tracer_level": level}) as t:
            with jaxprof.annotate("user_annotation"):
                step_fn(w0).block_until_ready()
        assert t.options.host_tracer_level == level
    # Level 0 turns host tracing off, so the option really reached the profiler.
    assert "user_annotation" not in read_xplane(only_xplane(tmp_path / "0")).names
    assert "user_annotation" in read_xplane(only_xplane(tmp_path / "2")).names


def _second_of(run: str) -> str:
    """JAX names a run by the second it stopped; a later run of that second gets a '-N' suffix."""
    return run.split("-")[0]


def test_captures_in_the_same_second_each_keep_their_own_run(tmp_path, step_fn, w0):
    """Issue 31 item 16: named traces and profile_function calls started in one second each leave a
    run of their own holding their own block. Captures go on until two did share a second."""
    def profiled_step(w):
        return step_fn(w)

    profiled = jaxprof.profile_function(tmp_path / "pf", warmup_steps=0)(profiled_step)
    runs: list[tuple[str, object]] = []
    for i in range(40):
        if i % 2:
            with jaxprof.trace(tmp_path / "pf", name=f"block_{i}") as t:
                step_fn(w0).block_until_ready()
            runs.append((f"block_{i}", t.run_dir))
        else:
            profiled(w0)
            runs.append(("profiled_step", profiled.last_run_dir))
        seconds = [_second_of(r.name) for _, r in runs]
        if len(runs) >= 4 and len(set(seconds)) < len(seconds):
            break
    dirs = [r for _, r in runs]
    assert len(set(seconds)) < len(seconds), "no two captures shared a second in 40 tries"
    assert len(set(dirs)) == len(dirs)
    assert sorted(p.name for p in (tmp_path / "pf" / "plugins" / "profile").iterdir()) == sorted(d.name for d in dirs)
    for name, run in runs:  # each run holds its own block (profile_function names it by qualname)
        assert any(n.endswith(name) for n in read_xplane(only_xplane(run)).names), (name, run)
