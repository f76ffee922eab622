"""Finding captured runs on disk (the search itself is libjaxprof's ``jp_runs_find``)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import _core


@dataclass(frozen=True)
class Run:
    """One capture: a directory of ``<host>.xplane.pb`` files."""

    path: Path      #: the run directory
    name: str       #: JAX's timestamp name, e.g. ``2026_11_21_15_10_24``
    mtime_ns: int   #: newest modification time of its xplane files
    n_files: int    #: xplane files (one per host)
    bytes: int      #: their total size

    @property
    def xplanes(self) -> list[Path]:
        """The xplane files of this run, sorted by name."""
        return sorted(p for p in self.path.iterdir() if p.name.endswith((".xplane.pb", ".xplane.pb.gz")))


def find_runs(log_dir: str | os.PathLike[str]) -> list[Run]:
    """Every run under ``log_dir`` (searched recursively, no symlinks), oldest first."""
    return [Run(Path(p), n, t, c, b) for p, n, t, c, b in _core.find_runs(os.fspath(log_dir))]


def latest_run(log_dir: str | os.PathLike[str]) -> Run | None:
    """The newest run under ``log_dir``, or ``None``."""
    runs = find_runs(log_dir)
    return runs[-1] if runs else None


def open_latest_profile(profile_dir: str | os.PathLike[str] = ".") -> Path | None:
    """Finds the newest profile run under ``profile_dir``, prints where it is and how to look at it.

    Returns the run directory, or ``None`` (with a message) when there is none.
    """
    try:
        run = latest_run(profile_dir)
    except OSError as exc:
        print(f"jaxprof: {exc}")
        return None
    if run is None:
        print(f"jaxprof: no profile (*.xplane.pb) under {profile_dir}")
        return None
    size_mb = run.bytes / 1e6
    print(f"Latest profile: {run.path} ({run.n_files} host file(s), {size_mb:.1f} MB)")
    print(f"  view it:  tensorboard --logdir {profile_dir}   (needs tensorboard-plugin-profile)")
    return run.path
