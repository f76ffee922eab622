"""``benchmark`` and ``profile_function``: timing and profiling single functions correctly."""
from __future__ import annotations

import functools
import math
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from . import _jax
from .trace import trace

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class BenchmarkResult:
    """Per-call wall times of a benchmarked function, in milliseconds."""

    times_ms: tuple[float, ...]
    name: str = ""

    @property
    def n(self) -> int:
        return len(self.times_ms)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times_ms)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.times_ms) if self.n > 1 else 0.0

    @property
    def min(self) -> float:
        return min(self.times_ms)

    @property
    def max(self) -> float:
        return max(self.times_ms)

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p90(self) -> float:
        """90th percentile (nearest rank)."""
        ordered = sorted(self.times_ms)
        return ordered[max(0, math.ceil(0.9 * self.n) - 1)]

    def __str__(self) -> str:
        return f"{self.mean:.2f} ms ± {self.std:.2f} ms (median {self.median:.1f}, n={self.n})"

    def assert_faster_than(self, ms: float) -> None:
        """Raises AssertionError unless the median time is below ``ms`` (for CI regression checks)."""
        if not self.median < ms:
            label = f"{self.name}: " if self.name else ""
            raise AssertionError(
                f"{label}median {self.median:.3f} ms is not faster than the limit {ms:.3f} ms "
                f"({self}; min {self.min:.3f}, p90 {self.p90:.3f})"
            )


def benchmark(fn: Callable[..., Any], *args: Any, iterations: int = 100, warmup: int = 10,
              **kwargs: Any) -> BenchmarkResult:
    """Times ``fn(*args, **kwargs)``, blocking on every array of each result (warm-ups too).

    >>> print(benchmark(jitted_step, params, batch, iterations=50))
    12.31 ms ± 0.40 ms (median 12.2, n=50)
    """
    if iterations < 1 or warmup < 0:
        raise ValueError(f"iterations must be >= 1 and warmup >= 0, got {iterations}, {warmup}")
    for _ in range(warmup):
        _jax.block_tree(fn(*args, **kwargs))
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        _jax.block_tree(fn(*args, **kwargs))
        times.append(1e3 * (time.perf_counter() - t0))
    return BenchmarkResult(tuple(times), getattr(fn, "__name__", ""))


benchmark_function = benchmark


def profile_function(log_dir: str | os.PathLike[str], warmup_steps: int = 3,
                     profile_steps: int = 1) -> Callable[[F], F]:
    """Decorator: each call runs ``warmup_steps`` untraced calls, then ``profile_steps`` traced ones.

    Every result is blocked on (all array leaves of the pytree), so compilation stays out of the
    capture and the traced calls' device work is inside it. Returns the last result; the run
    directory of the latest capture is ``wrapper.last_run_dir``.
    """
    if warmup_steps < 0 or profile_steps < 1:
        raise ValueError(f"warmup_steps must be >= 0 and profile_steps >= 1, got {warmup_steps}, {profile_steps}")

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for _ in range(warmup_steps):
                _jax.block_tree(fn(*args, **kwargs))
            result = None
            with trace(log_dir, getattr(fn, "__qualname__", None)) as t:
                for _ in range(profile_steps):
                    result = _jax.block_tree(fn(*args, **kwargs))
            wrapper.last_run_dir = t.run_dir  # type: ignore[attr-defined]
            return result

        wrapper.last_run_dir = None  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


__all__ = ["BenchmarkResult", "benchmark", "benchmark_function", "profile_function"]
