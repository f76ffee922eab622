"""benchmark and profile_function."""
from __future__ import annotations

import pytest

import jaxprof
from jaxprof import BenchmarkResult

from conftest import only_xplane, read_xplane


class Pending:
    """A pytree leaf that counts how often something waits on it."""

    blocks = 0

    def block_until_ready(self):
        Pending.blocks += 1
        return self


def test_result_statistics_are_exact():
    r = BenchmarkResult(tuple(float(v) for v in range(1, 11)), "f")
    assert (r.mean, r.min, r.max, r.median, r.p90, r.n) == (5.5, 1.0, 10.0, 5.5, 9.0, 10)
    assert r.std == pytest.approx(2.8722813232690143)
    assert str(r) == "5.50 ms ± 2.87 ms (median 5.5, n=10)"


def test_assert_faster_than_explains_failure():
    r = BenchmarkResult((10.0, 12.0, 11.0), "slow_fn")
    r.assert_faster_than(11.5)
    with pytest.raises(AssertionError, match=r"slow_fn: median 11.000 ms is not faster than the limit 10.000 ms"):
        r.assert_faster_than(10.0)


def test_benchmark_blocks_on_every_leaf_of_every_call(step_fn, w0):
    calls = []

    def fn(w, scale=1.0):
        calls.append(scale)
        return {"w": step_fn(w), "aux": [Pending(), Pending()], "note": "text"}

    Pending.blocks = 0
    result = jaxprof.benchmark(fn, w0, iterations=7, warmup=3, scale=2.0)
    assert len(calls) == 10 and set(calls) == {2.0}
    assert Pending.blocks == 20  # two leaves x (3 warm-up + 7 timed) calls
    assert result.n == 7 and all(t > 0 for t in result.times_ms)
    assert jaxprof.benchmark_function is jaxprof.benchmark


def test_benchmark_rejects_bad_counts(step_fn, w0):
    with pytest.raises(ValueError, match="iterations"):
        jaxprof.benchmark(step_fn, w0, iterations=0)


def test_profile_function_warms_up_then_profiles(tmp_path, step_fn, w0):
    calls = []

    @jaxprof.profile_function(tmp_path, warmup_steps=2, profile_steps=3)
    def work(w):
        calls.append(1)
        return step_fn(w)

    out = work(w0)
    assert out.shape == (64, 64)
    assert len(calls) == 5
    assert work.last_run_dir is not None and work.last_run_dir.is_dir()
    content = read_xplane(only_xplane(tmp_path))
    assert "test_profile_function_warms_up_then_profiles.<locals>.work" in content.names
    assert "jit_train_step" in content.hlo_modules
