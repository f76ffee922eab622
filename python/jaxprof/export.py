"""Trace export: a profile's whole timeline for Perfetto UI, chrome://tracing or TensorBoard.

The work is libjaxprof's ``jp_trace_export`` (the same code as ``jaxprof export``); this module
only converts arguments. Nothing is capped: ``events_out + events_cut == events_in``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from . import _core
from ._log import log

if TYPE_CHECKING:
    from . import _isolated

__all__ = ["ExportResult", "export_trace", "export_perfetto"]

TraceFormat = Literal["chrome", "perfetto"]


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote."""

    path: Path           #: the trace file
    events_in: int       #: events in the xplanes
    events_out: int      #: of those, written
    events_cut: int      #: of those, left out by ``window_ms``, ``steps`` or ``min_duration_us``
    derived: int         #: events of derived rows (Steps, XLA Modules, XLA Ops) written in addition
    flows: int           #: flow arrows (launch -> kernel, async op -> its end)
    overlap_tracks: int  #: extra threads holding partially overlapping events
    bytes: int           #: bytes written before compression


def export_trace(
    profile: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    format: TraceFormat = "chrome",
    window_ms: tuple[float, float] | None = None,
    steps: tuple[int, int] | None = None,
    min_duration_us: float = 0,
    host: str | None = None,
    gzip_level: int | None = None,
) -> ExportResult:
    """Exports ``profile`` (an xplane file, a run directory or a log directory: its newest run).

    ``out`` defaults to ``perfetto_trace.json.gz`` (chrome) or ``perfetto_trace.pftrace`` in the run
    directory; a name ending in ``.gz`` is
    gzip-compressed (level 1) unless ``gzip_level`` says otherwise. ``window_ms=(a, b)`` keeps
    events overlapping ``[a, b)`` ms of trace time (0 is the capture's start, as in
    ``jaxprof report``); ``steps=(a, b)`` keeps steps a..b
    (inclusive); ``min_duration_us`` drops shorter slices. Raises ``FileNotFoundError`` /
    ``ValueError`` / ``OSError`` with the library's message.
    """
    path = os.fspath(profile)
    if out is None:
        out = _core.default_trace_path(path, format)
    window_ps = (0, 0) if window_ms is None else (round(window_ms[0] * 1e9), round(window_ms[1] * 1e9))
    stats = _core.export_trace(
        path, os.fspath(out), format=format,
        gzip_level=-1 if gzip_level is None else gzip_level,
        window_ps=window_ps, steps=steps if steps is not None else (0, -1),
        min_duration_ps=round(min_duration_us * 1e6), host=host,
    )
    return ExportResult(path=Path(out), **stats)


def export_perfetto(run_dir: str | os.PathLike[str], limits: "_isolated.Limits | None" = None) -> Path | None:
    """Writes ``perfetto_trace.json.gz`` into a capture's run directory (``perfetto=True`` of
    ``Profiler`` and ``trace``), from inside a training process: the export runs as ``jaxprof export``
    in a child process (``_isolated``), so its failure, crash or hang is a logged warning, never an
    exception or the end of training."""
    from . import _isolated

    out = Path(run_dir) / "perfetto_trace.json.gz"
    outcome = _isolated.run(["export", run_dir, "-o", out], limits)
    if not outcome.ok:
        _isolated.warn(run_dir, outcome)
        return None
    counted = re.search(r"exported (\d+) of", outcome.stderr + outcome.stdout)
    log.info("trace for Perfetto UI / chrome://tracing: %s (%s events)", out, counted.group(1) if counted else "?")
    return out
