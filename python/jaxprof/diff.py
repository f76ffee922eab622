"""Comparing two profiles: ``diff(base, new)`` returns a :class:`DiffResult` backed by the C library.

The data is the document ``jaxprof diff BASE NEW --json`` prints (schema in docs/json-schema.md): step
time change with a noise estimate, the breakdown change, op and scope rows (added, removed,
slower, faster, unchanged, by self time per step) and findings that appeared or disappeared; its
tables come as typed rows (``jaxprof.results.DiffRow``, ``DiffPart``, ``DiffFinding``), which also
read as mappings (``row["change"]``).
All times are milliseconds per step. Python takes every limit as a fraction (``0.05`` = 5 %); the
document and the command line use percent (``_PCT_OF`` is where one becomes the other).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from . import _core
from .results import DiffFinding, DiffPart, DiffRow

PathLike = str | os.PathLike[str]

__all__ = ["DiffResult", "diff"]


#: Python keyword -> the library's percent parameter (``_core.diff``, the CLI's PCT flags): the one
#: place a fraction becomes a percent.
_PCT_OF = {
    "min_change": "min_change_pct",
    "min_share": "min_share_pct",
    "max_slowdown": "max_step_slowdown_pct",
    "max_op_slowdown": "max_op_slowdown_pct",
}


def _fraction(name: str, value: float | None) -> float | None:
    """``value`` checked as a fraction >= 0 (0.05 = 5 %); None stays None (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a fraction >= 0 (0.05 means 5 %), not {value!r}")
    return float(value)


@dataclass(frozen=True)
class _Request:
    """What a diff was asked for (fractions), kept so that :meth:`DiffResult.check` can ask again."""

    base: str
    new: str
    host: str | None
    min_change: float
    min_share: float

    def run(self, max_slowdown: float | None = None, max_op_slowdown: float | None = None) -> dict[str, Any]:
        """The library's document for these rows and gate limits (None: no limit)."""
        limits = dict(min_change=self.min_change, min_share=self.min_share, max_slowdown=max_slowdown,
                      max_op_slowdown=max_op_slowdown)
        pct = {_PCT_OF[k]: -1.0 if v is None else 100.0 * v for k, v in limits.items()}
        return json.loads(_core.diff(self.base, self.new, self.host, **pct))


@dataclass(frozen=True)
class DiffResult:
    """Two profiles compared. ``data`` is the whole JSON document; the properties are shortcuts."""

    data: dict[str, Any]
    _request: _Request = field(repr=False, compare=False)
    _gate_limits: tuple[float | None, float | None] | None = field(default=None, repr=False, compare=False)

    @property
    def base_path(self) -> str:
        return str(self.data["base"]["path"])

    @property
    def new_path(self) -> str:
        return str(self.data["new"]["path"])

    @property
    def steps(self) -> dict[str, Any]:
        """Step counts and mean/median/p90 ms of both runs, ``change_pct``, ``noise_pct``, ``verdict``."""
        return dict(self.data["steps"])

    @property
    def step_change_pct(self) -> float:
        """Mean step time change in percent of the base (positive: the new run is slower)."""
        return float(self.data["steps"]["change_pct"])

    @property
    def noise_pct(self) -> float:
        """Two standard errors of the mean difference, in percent of the base mean step."""
        return float(self.data["steps"]["noise_pct"])

    @property
    def significant(self) -> bool:
        """Whether the step time change is larger than the noise."""
        return bool(self.data["steps"]["significant"])

    @property
    def verdict(self) -> str:
        """``"slower"``, ``"faster"`` or ``"unchanged"`` for the step time."""
        return str(self.data["steps"]["verdict"])

    @property
    def breakdown(self) -> list[DiffPart]:
        """Per part (compute, idle, transfer, host, compile, ...): base_ms, new_ms, delta_ms per step."""
        return [DiffPart.from_json(r) for r in self.data["breakdown"]]

    @property
    def ops(self) -> list[DiffRow]:
        """Every op row, biggest change first, unchanged rows last."""
        return [DiffRow.from_json(r) for r in self.data["ops"]]

    @property
    def scopes(self) -> list[DiffRow]:
        """Every scope row: device scopes (named_scope paths), then host scopes (annotations)."""
        return [DiffRow.from_json(r) for r in self.data["scopes"]]

    def _ops(self, change: str) -> list[DiffRow]:
        return [row for row in self.ops if row.change == change]

    @property
    def slower_ops(self) -> list[DiffRow]:
        return self._ops("slower")

    @property
    def faster_ops(self) -> list[DiffRow]:
        return self._ops("faster")

    @property
    def added_ops(self) -> list[DiffRow]:
        return self._ops("added")

    @property
    def removed_ops(self) -> list[DiffRow]:
        return self._ops("removed")

    @property
    def changed_ops(self) -> list[DiffRow]:
        """Op rows that are not unchanged."""
        return [row for row in self.ops if row.change != "unchanged"]

    @property
    def summary(self) -> dict[str, Any]:
        """Row counts per change for ops and scopes, and op rows per matching method."""
        return dict(self.data["summary"])

    @property
    def findings(self) -> list[DiffFinding]:
        """Findings that appeared (``appeared: true``) or disappeared in the new run."""
        return [DiffFinding.from_json(r) for r in self.data["findings"]]

    @property
    def gate(self) -> dict[str, Any] | None:
        """The gate object when :func:`diff` was given a limit, else None."""
        return self.data.get("gate")

    def check(self, max_slowdown: float | None = None, max_op_slowdown: float | None = None) -> tuple[bool, str]:
        """The regression gate of ``jaxprof diff --fail-if-slower/--fail-if-op-slower``.

        ``max_slowdown``: the mean step time may grow by at most this fraction (0.05 = 5 %) when
        the change is beyond the noise. ``max_op_slowdown``: no op may get slower by more than this
        fraction and by more than its own noise (each row's ``noise_ms``: two standard errors of its
        change from its time per step across the steps of both runs, per execution with fewer than
        3 steps; the document's ``op_rule`` states it), and no added op may take a noticeable share
        of the step. Returns ``(ok,
        explanation)``; the explanation names the limit that tripped and the ops that got slower.
        Unless :func:`diff` was given the same limits, this re-reads both profiles.
        """
        limits = (_fraction("max_slowdown", max_slowdown), _fraction("max_op_slowdown", max_op_slowdown))
        if limits == (None, None):
            raise ValueError("check() needs max_slowdown or max_op_slowdown")
        gate = self.gate if limits == self._gate_limits else None
        if gate is None:
            gate = self._request.run(*limits)["gate"]
        return not gate["tripped"], str(gate["explanation"])

    def __repr__(self) -> str:
        s = self.data["steps"]
        return (f"DiffResult({self.base_path!r} -> {self.new_path!r}: step {s['base_mean_ms']:.3f} -> "
                f"{s['new_mean_ms']:.3f} ms ({s['change_pct']:+.1f} % +/- {s['noise_pct']:.1f} %, "
                f"{s['verdict']}), ops {self.data['summary']['ops']})")


def diff(base: PathLike, new: PathLike, *, host: str | None = None, min_change: float = 0.05,
         min_share: float = 0.005, max_slowdown: float | None = None,
         max_op_slowdown: float | None = None) -> DiffResult:
    """Compares two profiles, each a log dir (its newest run), a run dir or an ``.xplane.pb[.gz]``.

    Every limit is a fraction (0.05 = 5 %). A row is slower/faster when its self time per step
    changed by more than ``min_change`` of itself and by at least ``min_share`` of the base's
    mean step (0 picks the library defaults, 0.05 and 0.005). ``host`` keeps only hosts whose name
    contains it. With ``max_slowdown`` or ``max_op_slowdown`` (see :meth:`DiffResult.check`) the
    result carries the gate. Raises FileNotFoundError when a path holds no profile, ValueError for
    a corrupt file or a limit that is not a fraction >= 0.
    """
    request = _Request(os.fspath(base), os.fspath(new), host, _fraction("min_change", min_change) or 0.0,
                       _fraction("min_share", min_share) or 0.0)
    limits = (_fraction("max_slowdown", max_slowdown), _fraction("max_op_slowdown", max_op_slowdown))
    return DiffResult(request.run(*limits), request, None if limits == (None, None) else limits)
