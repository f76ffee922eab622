"""pytest helpers for performance regressions: compare a new profile with a baseline and fail the test
with the gate's explanation (the same check as ``jaxprof diff --fail-if-slower``).

Limits are fractions: ``max_slowdown=0.05`` allows the mean step time to grow by 5 %.
"""
from __future__ import annotations

from .diff import DiffResult, PathLike, diff

__all__ = ["assert_faster", "assert_no_regression"]


def assert_no_regression(base: PathLike, new: PathLike, max_slowdown: float | None = 0.05,
                         max_op_slowdown: float | None = None, host: str | None = None) -> DiffResult:
    """Fails (AssertionError with one paragraph naming the ops that got slower) when the new run's
    mean step time grew by more than ``max_slowdown`` beyond the noise, or when an op got slower by
    more than ``max_op_slowdown`` (or a noticeable op was added). Returns the diff otherwise."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    result = diff(base, new, host=host, max_slowdown=max_slowdown, max_op_slowdown=max_op_slowdown)
    ok, why = result.check(max_slowdown, max_op_slowdown)
    if not ok:
        raise AssertionError(why)
    return result


def assert_faster(base: PathLike, new: PathLike, min_speedup: float = 0.0, host: str | None = None) -> DiffResult:
    """Fails unless the new run's mean step time is lower than the base's beyond the noise, and by at
    least ``min_speedup`` (a fraction: 0.1 = 10 % less time per step). Returns the diff."""
    __tracebackhide__ = True
    if not min_speedup >= 0:
        raise ValueError(f"min_speedup must be a fraction >= 0, not {min_speedup!r}")
    result = diff(base, new, host=host)
    s = result.steps
    if not (result.verdict == "faster" and result.step_change_pct <= -100.0 * min_speedup):
        raise AssertionError(
            f"{new} is not faster than {base} by {100.0 * min_speedup:.1f} %: mean step "
            f"{s['base_mean_ms']:.3f} -> {s['new_mean_ms']:.3f} ms ({s['change_pct']:+.1f} %, noise "
            f"+/- {s['noise_pct']:.1f} %, {s['verdict']})")
    return result
