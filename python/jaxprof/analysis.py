"""Reading a profile: ``load(path)`` returns a :class:`Profile` backed by the C library.

Every method returns plain Python data (dicts and lists decoded from the library's JSON, schema
documented in docs/design.md), so results can be logged, compared or turned into DataFrames.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, fields
from typing import Any, TextIO

from . import _core, calibrate

PathLike = str | os.PathLike[str]

__all__ = ["Buffer", "Frame", "ModuleMemory", "Profile", "load", "report"]


@dataclass(frozen=True)
class Frame:
    """One Python frame of the code that made a buffer."""

    file: str
    function: str
    line: int
    library: bool  # JAX's or Python's own code rather than the user's


@dataclass(frozen=True)
class Buffer:
    """One buffer live at a compiled module's memory peak (from XLA's buffer assignment)."""

    module: str             # the module as XProf names it: "jit_step(6)"
    host: str               # the host whose capture holds the module
    id: int                 # XLA's logical buffer id; -1 for the small row
    bytes: int              # as allocated (padded): what it costs
    unpadded_bytes: int     # the dense size of its shape
    kind: str               # "parameter", "output", "constant", "temporary", or "small" (every
                            # buffer under 16 KiB, summed in one row)
    instruction: str        # the HLO instruction that defines it ("" for the small row)
    opcode: str
    shape: str              # "f32[4096,4096]"
    op_name: str            # the instruction's metadata op_name: "jit(step)/dot_general"
    source: str             # "file.py:16", the user's line; "" when the HLO names none
    function: str           # the function of that line
    stack: tuple[Frame, ...]  # the whole Python stack, innermost frame first
    n_small: int            # the small row: how many buffers it sums; else 0
    start: int              # the heap event that allocated it; -1 when live all program long
    end: int                # the heap event that freed it; -1 when live all program long

    @classmethod
    def _from_json(cls, module: dict[str, Any], row: dict[str, Any]) -> Buffer:
        known = {f.name for f in fields(cls)} - {"module", "host", "stack"}
        stack = tuple(Frame(**{k: f[k] for k in ("file", "function", "line", "library")}) for f in row["stack"])
        return cls(module=module["name"], host=module["host"], stack=stack, **{k: row[k] for k in known})


@dataclass(frozen=True)
class ModuleMemory:
    """A compiled module's memory at its peak: its headline numbers (bytes)."""

    name: str                 # "jit_step(6)"
    host: str
    runs: int                 # its executions in the profile
    peak_bytes: int           # most bytes live at once: always live + the heap's peak
    peak_unpadded_bytes: int
    peak_index: int           # the heap event where the peak is first reached; -1 without events
    peak_instruction: str     # the instruction that event processes
    peak_computation: str
    always_live_bytes: int    # parameters, outputs and constants: live all program long
    total_bytes: int          # every allocation: the peak with fragmentation
    parameter_bytes: int      # memory_analysis()'s argument size
    output_bytes: int         # its output size
    alias_bytes: int          # its alias size (donated parameters)
    temp_bytes: int           # its temp size
    note: str                 # why the heap part is missing, or ""

    @classmethod
    def _from_json(cls, module: dict[str, Any]) -> ModuleMemory:
        return cls(**{f.name: module[f.name] for f in fields(cls)})


class Profile:
    """A profile (an ``.xplane.pb[.gz]``, a run directory, or a log dir's newest run), analysed."""

    def __init__(self, path: PathLike, host: str | None = None, device: str | None = None) -> None:
        self.path = os.fspath(path)
        # a `jaxprof calibrate` of this machine gives CPU profiles captured here their peaks
        peaks = calibrate.cache_file()
        self._core = _core.Profile(self.path, host=host, device=device,
                                   cpu_peaks_file=str(peaks) if peaks else None)

    def render(self, section: str = "report", format: str = "text", *, top: int = 0, sort: str | None = None,
               filter: str | None = None, width: int = 0, columns: str | None = None,
               module: str | None = None, group: str | None = None) -> str:
        """The text (or ``"json"``/``"csv"``) the ``jaxprof <section>`` command prints; ``group``
        (ops only: ``"category"``, ``"module"``, ``"scope"``, ``"source"``) sums the ops by that field."""
        return self._core.render(section, format, top, sort, filter, width, columns, module, group)

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
        """Allocator use per memory space (GPU/TPU allocator events; empty on CPU)."""
        return self._json("memory")["memory"]

    def memory_modules(self) -> list[ModuleMemory]:
        """The compiled modules that ran (all of them when none did), largest memory peak first."""
        return [ModuleMemory._from_json(m) for m in self._json("memory")["modules"]]

    def memory_buffers(self, module: str | None = None) -> list[Buffer]:
        """The buffers live at a module's memory peak, largest first (the small row last): of
        ``module`` (its name "jit_step(6)" or plain "jit_step"), or with None of every module that
        ran, module by module in memory_modules()' order. Raises ValueError for an unknown module."""
        top = 0 if module else sys.maxsize  # without a module the library shows 10 per module unless told
        doc = self._json("memory", module=module, top=top)
        return [Buffer._from_json(m, b) for m in doc["modules"] for b in m["buffers"]]

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

    def warnings(self) -> list[str]:
        """What loading met that the analysis stands without, one sentence each naming the file:
        events whose metadata id names no metadata, a file that looks cut after a plane, an
        ignored CPU peaks cache file. Empty for a sound profile."""
        return self._json("report")["warnings"]

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
