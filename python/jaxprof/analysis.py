"""Reading a profile: ``load(path)`` returns a :class:`Profile` backed by the C library.

Every method returns plain Python data (dicts and lists decoded from the library's JSON, schema
documented in docs/design.md), so results can be logged, compared or turned into DataFrames.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

from . import _core, calibrate

PathLike = str | os.PathLike[str]

__all__ = ["Profile", "load", "report"]


class Profile:
    """A profile (an ``.xplane.pb[.gz]``, a run directory, or a log dir's newest run), analysed."""

    def __init__(self, path: PathLike, host: str | None = None, device: str | None = None) -> None:
        self.path = os.fspath(path)
        # a `jaxprof calibrate` of this machine gives CPU profiles captured here their peaks
        self._core = _core.Profile(self.path, host=host, device=device, cpu_peaks_file=str(calibrate.cache_file()))

    def render(self, section: str = "report", format: str = "text", *, top: int = 0, sort: str | None = None,
               filter: str | None = None, width: int = 0, columns: str | None = None) -> str:
        """The text (or ``"json"``/``"csv"``) the ``jaxprof <section>`` command prints."""
        return self._core.render(section, format, top, sort, filter, width, columns)

    def _json(self, section: str, **view: Any) -> dict[str, Any]:
        return json.loads(self.render(section, "json", **view))

    def summary(self) -> dict[str, Any]:
        """Everything at once: devices, step summary, KPIs, every table, findings."""
        return self._json("report")

    def ops(self, **view: Any) -> list[dict[str, Any]]:
        """Per HLO op: count, total/self/avg/min/max ms, % of op time, FLOP/s and bytes when known."""
        return self._json("ops", **view)["ops"]

    def steps(self) -> list[dict[str, Any]]:
        """Per step: duration and its breakdown (compute, collective, h2d, d2h, d2d, compile, host, idle)."""
        return self._json("steps")["steps"]

    def step_summary(self) -> dict[str, Any]:
        """How steps were found, and mean/median/p90/std/min/max step time."""
        return self._json("steps")["step_summary"]

    def scopes(self, **view: Any) -> list[dict[str, Any]]:
        """Device time by named_scope path, host time by TraceAnnotation name."""
        return self._json("scopes", **view)["scopes"]

    def compiles(self) -> list[dict[str, Any]]:
        return self._json("compiles")["compiles"]

    def transfers(self) -> list[dict[str, Any]]:
        return self._json("transfers")["transfers"]

    def kernels(self, **view: Any) -> list[dict[str, Any]]:
        return self._json("kernels", **view)["kernels"]

    def memory(self) -> list[dict[str, Any]]:
        return self._json("memory")["memory"]

    def kpis(self) -> list[dict[str, Any]]:
        return self._json("findings")["kpis"]

    def findings(self) -> list[dict[str, Any]]:
        """Named problems, each with severity, evidence and a fix; empty for a healthy profile."""
        return self._json("findings")["findings"]

    def hosts(self) -> dict[str, Any]:
        """Multi-host runs: per-host stats (``host_stats``), steps (``host_steps``), ``stragglers``,
        per-host ops (``host_ops``) and ``clock_method``; the lists are empty for one host."""
        doc = self._json("hosts")
        return {k: doc[k] for k in ("clock_method", "host_stats", "host_steps", "stragglers", "host_ops")}

    def __repr__(self) -> str:
        return f"Profile({self.path!r})"


def load(path: PathLike, host: str | None = None, device: str | None = None) -> Profile:
    """Loads and analyses a profile. Raises FileNotFoundError, or ValueError naming the byte offset
    of a truncated or corrupt file."""
    return Profile(path, host=host, device=device)


def report(path: PathLike, file: TextIO | None = None, *, top: int = 10, width: int = 100) -> str:
    """Prints (to ``file``, default stdout) and returns the ``jaxprof report`` text for ``path``."""
    text = load(path).render("report", top=top, width=width)
    print(text, end="", file=file if file is not None else sys.stdout)
    return text
