"""Finding captured runs on disk (the search itself is libjaxprof's ``jp_runs_find``).

Opening one in a viewer is ``jaxprof.viewers.open_latest_profile``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import _core


@dataclass(frozen=True)
class Run:
    """One capture: a directory of ``<host>.xplane.pb`` files, or of a pod's host summaries alone
    (``hosts`` empty, every host in ``summarized_hosts``: load it with ``summaries=True``).

    The fields are those of every run list (``jaxprof list --json``, the viewer's ``/api/runs``):
    ``name``, ``path``, ``hosts`` (names), ``summarized_hosts``, ``bytes``; the time in nanoseconds here
    (``mtime_ms`` there).
    """

    path: Path             #: the run directory
    name: str              #: JAX's timestamp name, e.g. ``2026_11_21_15_10_24``
    mtime_ns: int          #: newest modification time of its xplane files
    bytes: int             #: their total size
    hosts: tuple[str, ...]  #: one name per xplane file (its name without ``.xplane.pb[.gz]``), by file name
    #: the xplane file names, in the order of ``hosts`` (libjaxprof decides which names are xplanes)
    file_names: tuple[str, ...] = field(default=(), repr=False)
    #: hosts there only as their summary (``jaxprof summarize``), as on process 0 of a pod's run, or
    #: every host of a run of summaries alone
    summarized_hosts: tuple[str, ...] = ()

    @property
    def n_files(self) -> int:
        """Number of xplane files (one per host)."""
        return len(self.hosts)

    @property
    def xplanes(self) -> list[Path]:
        """The xplane files of this run, sorted by name."""
        return [self.path / name for name in self.file_names]


def xplane_host(name: str) -> str | None:
    """The host in an xplane file's name (``<host>.xplane.pb[.gz]``), ``None`` when ``name`` is not
    one: libjaxprof's rule (``jp_xplane_host_len``), the one every client uses."""
    raw = os.fsencode(name)
    n = _core.xplane_host_len(raw)
    return os.fsdecode(raw[:n]) if n else None


def find_runs(log_dir: str | os.PathLike[str]) -> list[Run]:
    """Every run under ``log_dir`` (searched recursively, no symlinks), oldest first."""
    return [Run(Path(p), n, t, b, h, f, s) for p, n, t, b, h, f, s in _core.find_runs(os.fspath(log_dir))]


def latest_run(log_dir: str | os.PathLike[str]) -> Run | None:
    """The newest run under ``log_dir``, or ``None``."""
    runs = find_runs(log_dir)
    return runs[-1] if runs else None

