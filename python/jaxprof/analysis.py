"""Reading a profile: ``load(path)`` returns a :class:`Profile` backed by the C library.

Each table method returns typed rows: frozen dataclasses generated from the library's column
descriptors (``jaxprof.results``; schema in docs/json-schema.md), whose fields are the JSON keys.
A row also reads as a mapping (``op["self_ms"]``, as when they were dicts) and ``row.to_dict()``
gives plain data, so results can still be logged, compared or turned into DataFrames.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, TextIO

from . import _core, calibrate
from .results import (TABLES as TABLE_CLASSES, AllocatorStat, Buffer, Collective, CollectiveInstance, Compile,
                      Device, Finding, FlameNode, Frame, HostStat, HostStep, Kernel, Kpi, Launch, LaunchStream, Line,
                      ModuleMemory, Op, Precision, Row, Scope, Step, Straggler, Transfer)

PathLike = str | os.PathLike[str]

__all__ = ["Buffer", "Frame", "ModuleMemory", "Profile", "load", "report"]


def _rows(cls: type[Row], rows: list[dict[str, Any]]) -> list[Any]:
    return [cls.from_json(r) for r in rows]


def _buffer(module: dict[str, Any], row: dict[str, Any]) -> Buffer:
    """A buffer row of the memory JSON with its module's columns (as the CSV's rows have them)."""
    return Buffer.from_json({**row, "module": module["name"], "host": module["host"], "runs": module["runs"],
                             "module_peak_bytes": module["peak_bytes"],
                             "module_always_live_bytes": module["always_live_bytes"]})


class Profile:
    """A profile (an ``.xplane.pb[.gz]``, a run directory, or a log dir's newest run), analysed;
    or, with ``data``, a serialized XSpace in memory (``path`` then only names it)."""

    def __init__(self, path: PathLike, host: str | None = None, device: str | None = None,
                 data: bytes | None = None, summaries: bool = False) -> None:
        self.path = os.fspath(path)
        # a `jaxprof calibrate` of this machine gives CPU profiles captured here their peaks
        peaks = calibrate.cache_file()
        more: dict[str, Any] = {"data": data} if data is not None else {}
        if summaries:
            more["summaries"] = True
        self._core = _core.Profile(self.path, host=host, device=device,
                                   cpu_peaks_file=str(peaks) if peaks else None, **more)

    def render(self, section: str = "report", format: str = "text", *, top: int = 0, sort: str | None = None,
               filter: str | None = None, width: int = 0, columns: str | None = None,
               module: str | None = None, group: str | None = None, table: str | None = None) -> str:
        """The text (or ``"json"``/``"csv"``) the ``jaxprof <section>`` command prints; ``group``
        (ops only: ``"category"``, ``"module"``, ``"scope"``, ``"source"``) sums the ops by that field;
        ``table`` (comm: ``"comm_instances"``, launch: ``"launch_streams"``) that second table alone."""
        return self._core.render(section, format, top, sort, filter, width, columns, module, group, table)

    def report(self, *, top: int = 10, width: int = 100) -> str:
        """The ``jaxprof report`` text."""
        return self.render("report", top=top, width=width)

    def _json(self, section: str, **view: Any) -> dict[str, Any]:
        return json.loads(self.render(section, "json", **view))

    def summary(self) -> dict[str, Any]:
        """Everything at once, as the report's JSON document (plain data: devices, step summary,
        KPIs, every table, findings; docs/json-schema.md). The table methods give typed rows."""
        return self._json("report")

    def ops(self, **view: Any) -> list[Op]:
        """Per HLO op: count, total/self/avg/min/max ms, % of op time, FLOP/s and bytes when known."""
        return _rows(Op, self._json("ops", **view)["ops"])

    def steps(self) -> list[Step]:
        """Per step: duration and its breakdown (compute, collective, h2d, d2h, d2d, compile, host, idle)."""
        return _rows(Step, self._json("steps")["steps"])

    def step_summary(self) -> dict[str, Any]:
        """How steps were found, and mean/median/p90/std/min/max step time."""
        return self._json("steps")["step_summary"]

    def scopes(self, **view: Any) -> list[Scope]:
        """Device time by named_scope path, host time by TraceAnnotation name."""
        return _rows(Scope, self._json("scopes", **view)["scopes"])

    def compiles(self) -> list[Compile]:
        return _rows(Compile, self._json("compiles")["compiles"])

    def transfers(self) -> list[Transfer]:
        return _rows(Transfer, self._json("transfers")["transfers"])

    def kernels(self, **view: Any) -> list[Kernel]:
        return _rows(Kernel, self._json("kernels", **view)["kernels"])

    def launches(self, **view: Any) -> list[Launch]:
        """GPU: per (device, kernel) its launches matched to their host calls: api, queue and launch
        delay, short kernels (the devices' idle split by cause is in devices())."""
        return _rows(Launch, self._json("launch", **view)["launches"])

    def launch_streams(self) -> list[LaunchStream]:
        """GPU: per device and stream, its idle gaps by cause (HTA's per-stream split)."""
        return _rows(LaunchStream, self._json("launch")["launch_streams"])

    def launch_queue(self) -> dict[str, Any]:
        """GPU: each device's launch queue depth over time, as ``launch --json``'s ``launch_queue``:
        ``{max_points, devices: [{device, changes, downsampled, bucket_ms, points: [[t_ms, depth]]}]}``."""
        return self._json("launch")["launch_queue"]

    def lines(self, **view: Any) -> list[Line]:
        """Device self time by the user's source line that made the ops."""
        return _rows(Line, self._json("lines", **view)["lines"])

    def flame(self) -> list[FlameNode]:
        """Device time by Python call stack as a tree, in depth-first order (``parent`` indexes it)."""
        return _rows(FlameNode, self._json("flame")["flame"])

    def comm(self, **view: Any) -> list[Collective]:
        """Per collective op: hidden and exposed time, message size, group size, algbw and busbw
        (nccl-tests convention), the wait across devices and the last to arrive."""
        return _rows(Collective, self._json("comm", **view)["comm"])

    def comm_instances(self) -> list[CollectiveInstance]:
        """Every collective instance (the k-th run of an op on each device), by earliest start: its
        exposed time min and max, wait, last device, z-score of the starts and stragglers."""
        return _rows(CollectiveInstance, self._json("comm")["comm_instances"])

    def devices(self) -> list[Device]:
        return _rows(Device, self._json("findings")["devices"])

    def memory(self) -> list[AllocatorStat]:
        """Allocator use per memory space (GPU/TPU allocator events; empty on CPU)."""
        return _rows(AllocatorStat, self._json("memory")["memory"])

    def memory_modules(self) -> list[ModuleMemory]:
        """The compiled modules that ran (all of them when none did), largest memory peak first."""
        return _rows(ModuleMemory, self._json("memory")["modules"])

    def memory_buffers(self, module: str | None = None) -> list[Buffer]:
        """The buffers live at a module's memory peak, largest first (the small row last): of
        ``module`` (its name "jit_step(6)" or plain "jit_step"), or with None of every module that
        ran, module by module in memory_modules()' order. Raises ValueError for an unknown module."""
        top = 0 if module else sys.maxsize  # without a module the library shows 10 per module unless told
        doc = self._json("memory", module=module, top=top)
        return [_buffer(m, b) for m in doc["modules"] for b in m["buffers"]]

    def kpis(self) -> list[Kpi]:
        return _rows(Kpi, self._json("findings")["kpis"])

    def findings(self) -> list[Finding]:
        """Named problems, each with severity, evidence and a fix; empty for a healthy profile."""
        return _rows(Finding, self._json("findings")["findings"])

    def hosts(self) -> dict[str, Any]:
        """Multi-host runs: per-host stats (``host_stats``: :class:`HostStat` rows), steps
        (``host_steps``: :class:`HostStep`), ``stragglers`` (:class:`Straggler`), per-host ops
        (``host_ops``: host name to :class:`Op` rows) and ``clock_method``; the lists are empty for
        one host."""
        doc = self._json("hosts")
        return {"clock_method": doc["clock_method"], "host_stats": _rows(HostStat, doc["host_stats"]),
                "host_steps": _rows(HostStep, doc["host_steps"]), "stragglers": _rows(Straggler, doc["stragglers"]),
                "host_ops": {h: _rows(Op, ops) for h, ops in doc["host_ops"].items()}}

    def warnings(self) -> list[str]:
        """What loading met that the analysis stands without, one sentence each naming the file:
        events whose metadata id names no metadata, a file that looks cut after a plane, an
        ignored CPU peaks cache file. Empty for a sound profile."""
        return self._json("report")["warnings"]

    def capture_health(self) -> list[dict[str, str]]:
        """What the capture itself lacks, each ``{kind, host, text}``: the profiler's own ``error``
        and ``warning`` messages (the XSpace's), an ``empty device`` (a host whose devices recorded
        nothing while it dispatched), a module with ``no HLO``. Empty for a complete capture."""
        return self._json("findings")["capture_health"]

    def precision(self) -> list[Precision]:
        """Op self time by the precision the ops compute in (their dtype), the most first."""
        return _rows(Precision, self._json("ops")["precision"])

    def table(self, name: str) -> list[Row]:
        """Every row of one table by its name (``Profile.TABLES``; the names of --json, of
        ``jaxprof sql`` and of docs/json-schema.md)."""
        if name not in self.TABLES:
            raise ValueError(f"no table {name!r}; the tables: {', '.join(self.TABLES)}")
        return self.TABLES[name](self)

    def to_pandas(self, name: str = "ops") -> Any:
        """One table as a pandas DataFrame (pandas is imported only here): a column per JSON key,
        units in the names (``self_ms``, ``bytes``), nullable typed columns (Int64, Float64,
        boolean, string); stacks as tuples of :class:`Frame`. Raises ImportError without pandas."""
        from ._frames import frame

        return frame(TABLE_CLASSES[name] if name in TABLE_CLASSES else None, self.table(name))

    def dataframes(self) -> dict[str, Any]:
        """Every table as a DataFrame, by name."""
        return {name: self.to_pandas(name) for name in self.TABLES}

    def __repr__(self) -> str:
        return f"Profile({self.path!r})"

    #: every table a profile has, by name, and how its rows are read
    TABLES: dict[str, Callable[["Profile"], list[Any]]] = {
        "devices": lambda p: p.devices(), "kpis": lambda p: p.kpis(), "ops": lambda p: p.ops(),
        "precision": lambda p: p.precision(), "steps": lambda p: p.steps(), "scopes": lambda p: p.scopes(),
        "kernels": lambda p: p.kernels(), "memory": lambda p: p.memory(), "modules": lambda p: p.memory_modules(),
        "buffers": lambda p: p.memory_buffers(), "transfers": lambda p: p.transfers(),
        "compiles": lambda p: p.compiles(), "findings": lambda p: p.findings(), "lines": lambda p: p.lines(),
        "flame": lambda p: p.flame(), "host_stats": lambda p: p.hosts()["host_stats"],
        "host_steps": lambda p: p.hosts()["host_steps"], "stragglers": lambda p: p.hosts()["stragglers"],
        "launches": lambda p: p.launches(), "launch_streams": lambda p: p.launch_streams(),
        "comm": lambda p: p.comm(), "comm_instances": lambda p: p.comm_instances(),
    }


def load(path: PathLike | bytes | bytearray | memoryview, host: str | None = None,
         device: str | None = None, *, summaries: bool = False) -> Profile:
    """Loads and analyses a profile: a path, or the bytes of a serialized XSpace (or its gzip), as
    ``jaxprof.profile()`` captures one (``prof.xspace``). ``summaries=True``: a run directory (or a
    log directory's newest run) with host summaries (``jaxprof summarize``, a pod's processes) is
    merged from them, as ``jaxprof hosts`` does: ``hosts()`` and ``findings()`` answer, the tables
    of every event stay empty.
    Raises FileNotFoundError, or ValueError naming the byte offset of a truncated or corrupt input."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        return Profile("<memory>", host=host, device=device, data=bytes(path))
    return Profile(path, host=host, device=device, summaries=summaries)


def report(path: PathLike, file: TextIO | None = None, *, top: int = 10, width: int = 100) -> str:
    """Prints (to ``file``, default stdout) and returns the ``jaxprof report`` text for ``path``."""
    text = load(path).render("report", top=top, width=width)
    print(text, end="", file=file if file is not None else sys.stdout)
    return text
