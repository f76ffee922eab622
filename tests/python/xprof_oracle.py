"""XProf as an oracle: run XProf's own converters on an ``.xplane.pb`` and return its numbers.

Used by the differential tests (jaxprof vs XProf on the same file).  Needs the ``xprof``
package (``pip install xprof``); :func:`available` says whether it can be imported.

XProf writes cached results beside its input, so every call copies the input into a fresh
temporary directory first (and gunzips ``.xplane.pb.gz`` there).  Each XProf tool runs
inside its own ``try``: a tool that fails or gives nothing yields ``None`` for its keys.

Units in the returned dict (all converted from XProf's own units, noted per field):

* ``*_us``  microseconds, ``*_ms`` milliseconds, ``*_ps`` picoseconds, ``*_bytes`` bytes.
* XProf's tables aggregate over *all* device planes (hlo_stats, framework_op_stats,
  kernel_stats): a row is the sum over devices, not a per-device mean.

Command line: ``python tests/python/xprof_oracle.py FILE`` prints the dict as JSON.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

TOOLS: tuple[str, ...] = (
    "overview_page",
    "kernel_stats",
    "hlo_stats",
    "framework_op_stats",
    "op_profile",
    "memory_profile",
)

# Keys of xprof_numbers() filled from each tool (all None when that tool fails).
_KEYS_BY_TOOL: dict[str, tuple[str, ...]] = {
    "overview_page": ("device_type", "device_count", "steps", "overview"),
    "kernel_stats": ("kernels",),
    "hlo_stats": ("hlo_ops",),
    "framework_op_stats": ("framework_ops", "framework_idle_us"),
    "op_profile": ("op_profile_idle_ps", "op_profile_total_ps", "op_profile_programs", "device_idle_pct_exact"),
    "memory_profile": ("memory",),
    "roofline_model": ("roofline_ops",),  # not in TOOLS: asked for by name
}


def available() -> bool:
    """True when the ``xprof`` package (XProf's converters) can be imported."""
    try:
        from xprof.convert import raw_to_tool_data  # noqa: F401
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


# --------------------------------------------------------------------------------------
# Running XProf
# --------------------------------------------------------------------------------------


def _stage_input(path: Path, workdir: Path) -> Path:
    """Copies (or gunzips) ``path`` into ``workdir``; returns the ``.xplane.pb`` XProf reads."""
    name = path.name
    if name.endswith(".gz"):
        dest = workdir / name[: -len(".gz")]
        with gzip.open(path, "rb") as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
    else:
        dest = workdir / name
        shutil.copyfile(path, dest)
    if not dest.name.endswith(".xplane.pb"):  # XProf keys off the suffix
        fixed = dest.with_name(dest.name + ".xplane.pb")
        dest.rename(fixed)
        dest = fixed
    return dest


def _run_tool(staged: Path, tool: str) -> Any:
    """Runs one XProf tool on ``staged`` and returns its parsed JSON (or None)."""
    from xprof.convert import raw_to_tool_data

    params: dict[str, Any] = {"use_saved_result": False}
    if tool == "memory_profile":
        params["host"] = ""
    data, _content_type = raw_to_tool_data.xspace_to_tool_data([str(staged)], tool, params)
    if data is None:
        return None
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")
    if isinstance(data, str):
        data = data.strip()
        if not data:
            return None
        return json.loads(data)
    return data


def run_tools(path: str | Path, tools: tuple[str, ...] = TOOLS) -> dict[str, Any]:
    """Raw parsed XProf output per tool (``None`` for a tool that failed or gave nothing).

    The special key ``_errors`` maps failed tools to their exception text, and ``_seconds``
    maps each tool to its run time.
    """
    src = Path(path)
    out: dict[str, Any] = {"_errors": {}, "_seconds": {}}
    with tempfile.TemporaryDirectory(prefix="xprof_oracle_") as tmp:
        staged = _stage_input(src, Path(tmp))
        for tool in tools:
            t0 = time.perf_counter()
            try:
                out[tool] = _run_tool(staged, tool)
            except Exception as exc:  # one failing tool must not sink the others
                out[tool] = None
                out["_errors"][tool] = f"{type(exc).__name__}: {exc}"
            out["_seconds"][tool] = round(time.perf_counter() - t0, 3)
    return out


# --------------------------------------------------------------------------------------
# gviz DataTable helpers
# --------------------------------------------------------------------------------------


def _table_rows(table: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    """Yields each row of a gviz-like ``{cols, rows}`` table as ``{col_id: value}``."""
    if not table:
        return
    ids = [c.get("id") for c in table.get("cols", [])]
    for row in table.get("rows", []):
        cells = row.get("c", [])
        yield {cid: (cell.get("v") if isinstance(cell, dict) else None) for cid, cell in zip(ids, cells)}


def _num(value: Any) -> float | None:
    """Parses XProf's numbers: ``86.5``, ``"86.5%"``, ``"4.9e+13"``; None for nan/garbage."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        f = float(value)
    else:
        s = str(value).strip().rstrip("%").strip()
        try:
            f = float(s)
        except ValueError:
            return None
    return None if math.isnan(f) or math.isinf(f) else f


def _int(value: Any) -> int | None:
    f = _num(value)
    return None if f is None else int(round(f))


def _dims(value: Any) -> tuple[int, int, int] | None:
    """``"256,1,1"`` -> ``(256, 1, 1)``."""
    if value is None:
        return None
    parts = [p for p in str(value).replace(" ", "").split(",") if p]
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        return None
    return tuple((nums + [1, 1, 1])[:3])  # type: ignore[return-value]


def _find_table(tables: Any, *col_ids: str) -> dict[str, Any] | None:
    """The first table among ``tables`` whose column ids include all of ``col_ids``."""
    if isinstance(tables, dict):
        tables = [tables]
    for t in tables or []:
        ids = {c.get("id") for c in t.get("cols", [])}
        if all(c in ids for c in col_ids):
            return t
    return None


# --------------------------------------------------------------------------------------
# Per-tool normalisation
# --------------------------------------------------------------------------------------


def parse_kernel_stats(doc: Any) -> list[dict[str, Any]]:
    """kernel_stats rows -> kernels.  Durations are microseconds, summed over all GPUs.

    A row is one (kernel name, registers, shmem, block, grid, op_name, ...) key; XProf
    merges identical keys across devices and keeps the top 1000 by total duration.
    """
    table = _find_table(doc, "kernel_name")
    kernels = []
    for r in _table_rows(table):
        kernels.append(
            {
                "name": r.get("kernel_name"),
                "registers": _int(r.get("registers_per_thread")),
                "shmem_bytes": _int(r.get("shmem_bytes")),
                "block": _dims(r.get("block_dim")),
                "grid": _dims(r.get("grid_dim")),
                "occupancy_pct": _num(r.get("occupancy_pct")),
                "occurrences": _int(r.get("occurrences")),
                "total_us": _num(r.get("total_duration_us")),
                "min_us": _num(r.get("min_duration_us")),
                "max_us": _num(r.get("max_duration_us")),
                "op_name": r.get("op_name"),
            }
        )
    return kernels


def parse_hlo_stats(doc: Any) -> list[dict[str, Any]]:
    """hlo_stats rows -> hlo_ops.  Times are microseconds summed over all devices.

    XProf excludes IDLE here; one row per (program_id, hlo op name) after merging devices.
    """
    table = _find_table(doc, "hlo_op_name")
    ops = []
    for r in _table_rows(table):
        ops.append(
            {
                "program_id": r.get("program_id"),
                "category": r.get("category"),
                "name": r.get("hlo_op_name"),
                "framework_op": r.get("tf_op_name"),
                "occurrences": _int(r.get("occurrences")),
                "total_us": _num(r.get("total_time")),
                "self_us": _num(r.get("total_self_time")),
                "source": r.get("source_info") or None,
                "core_type": r.get("core_type") or None,
                "model_gflops_per_s": _num(r.get("model_flop_rate")),
                "hbm_gib_per_s": _num(r.get("hbm_bw")),
                "intensity": _num(r.get("operational_intensity")),
                "bound_by": r.get("bound_by") or None,
            }
        )
    return ops


def parse_framework_op_stats(doc: Any) -> tuple[list[dict[str, Any]] | None, dict[str, float] | None]:
    """framework_op_stats -> (ops, idle).  XProf returns two tables: [with IDLE, without IDLE].

    ``ops`` comes from the table *without* IDLE; ``idle`` maps ``"Device"``/``"Host"`` to the
    IDLE rows' total microseconds from the first table (absent key: no such row).
    """
    tables = doc if isinstance(doc, list) else [doc]
    tables = [t for t in tables if _find_table(t, "operation")]
    if not tables:
        return None, None
    with_idle = tables[0]
    without_idle = tables[1] if len(tables) > 1 else tables[0]
    ops = []
    for r in _table_rows(without_idle):
        if r.get("type") == "IDLE":
            continue
        ops.append(
            {
                "host_or_device": r.get("host_or_device"),
                "type": r.get("type"),
                "name": r.get("operation"),
                "occurrences": _int(r.get("occurrences")),
                "total_us": _num(r.get("total_time")),
                "self_us": _num(r.get("total_self_time")),
            }
        )
    idle = {
        str(r.get("host_or_device")): _num(r.get("total_self_time")) or 0.0
        for r in _table_rows(with_idle)
        if r.get("type") == "IDLE"
    }
    return ops, idle


def _p(tables: list[dict[str, Any]], idx: int) -> dict[str, Any]:
    return (tables[idx].get("p") or {}) if len(tables) > idx and isinstance(tables[idx], dict) else {}


def parse_overview(doc: Any) -> dict[str, Any]:
    """overview_page -> device_type, device_count, steps, overview.

    The overview is a list of 7 gviz tables: [0] analysis (idle/duty cycle/...), [1] input
    analysis (step-time table, in ms), [2] run environment, [3] recommendation, [4]
    inference latency, [5] unused, [6] diagnostics.
    """
    tables = doc if isinstance(doc, list) else [doc]
    run_env = _find_table(tables, "host_id") or (tables[2] if len(tables) > 2 else {})
    env_p = run_env.get("p") or {}
    device_type = env_p.get("device_type") or None
    device_count = _int(env_p.get("device_core_count"))

    overview: dict[str, Any] = {}
    for idx in (0, 1):
        for key, value in _p(tables, idx).items():
            f = _num(value)
            if f is not None and key not in overview:
                overview[key] = f
    for key in ("host_count",):
        if _int(env_p.get(key)) is not None:
            overview[key] = _int(env_p.get(key))
    for key in ("device_idle_time_percent", "device_duty_cycle_percent"):
        overview.setdefault(key, None)  # the GPU overview has neither
    overview["hardware_type"] = _p(tables, 1).get("hardware_type")
    overview["input_conclusion"] = _p(tables, 1).get("input_conclusion")
    overview["diagnostics"] = [
        (r.get("severity"), r.get("message")) for r in _table_rows(_find_table(tables, "severity", "message"))
    ]
    return {
        "device_type": device_type,
        "device_count": device_count,
        "steps": parse_steps(tables),
        "overview": overview,
    }


def _stepnum(value: Any) -> int | str | None:
    """Step numbers are strings in XProf's table: ``"0"`` -> 0; ``"train 1"`` stays a string."""
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return str(value)


def parse_steps(tables: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The overview's step-time table -> step summary (milliseconds); None if XProf saw no steps.

    GPU/CPU columns: stepTimeMs + deviceComputeTimeMs + ...; TPU columns: tcComputeTimeMs,
    tcIdleTimeMs, ... (no stepTimeMs; step time is the sum of the TPU components).
    count/mean/min/max/std are recomputed from the per-step rows (std = population std
    like XProf's Stat<>), and XProf's own (rounded) strings are kept as ``xprof_*``.
    """
    table = _find_table(tables, "stepnum")
    if table is None:
        return None
    rows = list(_table_rows(table))
    if not rows:
        return None
    p = table.get("p") or {}
    per_step = []
    detail = []
    for r in rows:
        nums = {k: _num(v) for k, v in r.items() if k not in ("stepnum", "tooltip")}
        step_ms = nums.get("stepTimeMs")
        if step_ms is None:  # TPU table: components add up to the step time
            step_ms = sum(v for k, v in nums.items() if k.endswith("TimeMs") and v is not None)
        compute = nums.get("deviceComputeTimeMs", nums.get("tcComputeTimeMs"))
        stepnum = _stepnum(r.get("stepnum"))
        per_step.append((stepnum, step_ms, compute))
        detail.append({"stepnum": stepnum, **nums})
    times = [s[1] for s in per_step if s[1] is not None]
    mean = sum(times) / len(times) if times else None
    std = math.sqrt(sum((t - mean) ** 2 for t in times) / len(times)) if times else None
    return {
        "count": len(rows),
        "mean_ms": mean,
        "min_ms": min(times) if times else None,
        "max_ms": max(times) if times else None,
        "std_ms": std,
        "per_step": per_step,
        "per_step_detail": detail,
        "xprof_mean_ms": _num(p.get("steptime_ms_average")),
        "xprof_min_ms": _num(p.get("steptime_ms_minimum")),
        "xprof_max_ms": _num(p.get("steptime_ms_maximum")),
        "xprof_std_ms": _num(p.get("steptime_ms_standard_deviation")),
    }


def parse_op_profile(doc: Any) -> dict[str, Any]:
    """op_profile -> idle and per-program times in picoseconds (summed over devices).

    ``byProgram`` is the tree with IDLE, ``byProgramExcludeIdle`` without.  When there are
    no XLA programs at all (TF GPU files) the byProgram root *is* the IDLE node.
    """
    if not isinstance(doc, dict):
        return {k: None for k in _KEYS_BY_TOOL["op_profile"]}
    root = doc.get("byProgram") or {}
    idle = None
    if root.get("name") == "IDLE":
        idle = _int(root.get("metrics", {}).get("rawTime"))
    for child in root.get("children", []):
        if child.get("name") == "IDLE":
            idle = _int(child.get("metrics", {}).get("rawTime"))
    total = _int(root.get("metrics", {}).get("rawTime"))
    programs = {}
    excl = doc.get("byProgramExcludeIdle") or {}
    for child in excl.get("children", []):
        programs[child.get("name")] = _int(child.get("metrics", {}).get("rawTime"))
    return {
        "op_profile_idle_ps": idle,
        "op_profile_total_ps": total,
        "op_profile_programs": programs,
        # Unrounded twin of overview's device_idle_time_percent (which is "%.1f" text and
        # missing for GPU): IDLE / (ops + IDLE), all devices together.
        "device_idle_pct_exact": 100.0 * idle / total if idle is not None and total else None,
    }


def parse_memory_profile(doc: Any) -> dict[str, dict[str, Any]] | None:
    """memory_profile -> {memory_id: peak numbers in bytes}.

    ``peak_bytes_in_use`` is XProf's profile peak: max over this allocator's
    MemoryAllocation/MemoryDeallocation events of (bytes_reserved + bytes_allocated), i.e.
    stack + heap.  ``peak_bytes_usage_lifetime`` is the allocator's own ``peak_bytes_in_use``
    stat on the *last event XProf visited* (not a max).  An empty dict means XProf found no
    memory events; None means the tool failed.
    """
    if not isinstance(doc, dict):
        return None
    per = doc.get("memoryProfilePerAllocator") or {}
    out: dict[str, dict[str, Any]] = {}
    for mid in sorted(per):
        summary = per[mid].get("profileSummary") or {}
        peak = summary.get("peakStats") or {}
        out[mid] = {
            "memory_id": mid,
            "peak_bytes_in_use": _int(peak.get("peakBytesInUse")),
            "peak_heap_bytes": _int(peak.get("heapAllocatedBytes")),
            "peak_stack_bytes": _int(peak.get("stackReservedBytes")),
            "peak_free_bytes": _int(peak.get("freeMemoryBytes")),
            "peak_fragmentation": _num(peak.get("fragmentation")),
            "peak_time_ps": _int(summary.get("peakStatsTimePs")),
            "peak_bytes_usage_lifetime": _int(summary.get("peakBytesUsageLifetime")),
            "memory_capacity_bytes": _int(summary.get("memoryCapacity")),
            # XProf keeps every event in the timeline when there are <= 1000 of them (else a
            # max-filtered sample of 1000); memoryProfileSnapshots is trimmed to the peak step.
            "timeline_points": len(per[mid].get("sampledTimelineSnapshots") or []),
        }
    return out


# --------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------

def parse_roofline_model(doc: Any) -> list[dict[str, Any]]:
    """roofline_model's first table (the whole profile, step "Total") -> one row per operation,
    the "Program" row included: efficiency = max(compute, memory utilization) of its roof."""
    tables = doc if isinstance(doc, list) else [doc]
    rows = []
    for r in _table_rows(tables[0] if tables else None):
        if r.get("step") != "Total":
            continue
        rows.append({"name": r.get("operation"), "total_us": _num(r.get("total_time")),
                     "efficiency": _num(r.get("roofline_efficiency")), "bound_by": r.get("bound_by"),
                     "gflops_per_s": _num(r.get("measured_flop_rate"))})
    return rows


_PARSERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "overview_page": parse_overview,
    "kernel_stats": lambda d: {"kernels": parse_kernel_stats(d)},
    "hlo_stats": lambda d: {"hlo_ops": parse_hlo_stats(d)},
    "framework_op_stats": lambda d: dict(zip(("framework_ops", "framework_idle_us"), parse_framework_op_stats(d))),
    "op_profile": parse_op_profile,
    "memory_profile": lambda d: {"memory": parse_memory_profile(d)},
    "roofline_model": lambda d: {"roofline_ops": parse_roofline_model(d)},
}


def sum_by_name(rows: list[dict[str, Any]], count: str, times: tuple[str, ...], scale: float = 1.0) -> dict[str, list[float]]:
    """Rows summed by their ``name``: ``[Σ count, Σ time * scale for each of times]``. XProf's hlo_stats
    keys rows by program and jaxprof by module name, so comparisons sum both sides by op name."""
    out: dict[str, list[float]] = {}
    for r in rows:
        s = out.setdefault(r["name"], [0] + [0.0] * len(times))
        s[0] += r[count]
        for i, key in enumerate(times):
            s[i + 1] += r[key] * scale
    return out


def xprof_numbers(path: str | Path, tools: tuple[str, ...] = TOOLS) -> dict[str, Any]:
    """XProf's numbers for one ``.xplane.pb`` (or ``.xplane.pb.gz``), normalised.

    Keys (``None`` wherever XProf gives no number or the tool failed):
    ``device_type``, ``device_count``, ``kernels``, ``hlo_ops``, ``framework_ops``,
    ``framework_idle_us``, ``steps``, ``overview``, ``op_profile_idle_ps``,
    ``op_profile_total_ps``, ``op_profile_programs``, ``device_idle_pct_exact``, ``memory``, plus ``errors``
    (tool -> exception text) and ``seconds`` (tool -> run time).
    """
    raw = run_tools(path, tools)
    result: dict[str, Any] = {key: None for t in tools for key in _KEYS_BY_TOOL[t]}
    errors = dict(raw["_errors"])
    for tool in tools:
        doc = raw.get(tool)
        if doc is None:
            errors.setdefault(tool, "XProf returned no data")
            continue
        try:
            result.update(_PARSERS[tool](doc))
        except Exception as exc:  # a format change in one tool must not sink the rest
            errors[tool] = f"parse: {type(exc).__name__}: {exc}"
    result["errors"] = errors
    result["seconds"] = raw["_seconds"]
    return result


# --------------------------------------------------------------------------------------
# Memory viewer (memory at the peak, from the HLO buffer assignment)
# --------------------------------------------------------------------------------------

_MIB = 1 << 20


def _mib_bytes(doc: dict[str, Any], key: str) -> int:
    """XProf's MiB (a double: bytes / 2^20, exact) back to bytes; proto3 JSON omits zeros."""
    return round((doc.get(key) or 0) * _MIB)


def _no_layout(shape: str | None) -> str | None:
    """``f32[4096,4096]{1,0}`` -> ``f32[4096,4096]``: XProf prints layouts (tiles, memory spaces), we do not."""
    if shape is None:
        return None
    while True:
        out = re.sub(r"\{[^{}]*\}", "", shape)
        if out == shape:
            return out
        shape = out


def parse_memory_viewer(doc: dict[str, Any]) -> dict[str, Any]:
    """One module's memory-viewer result (XProf's PreprocessResult) in bytes.

    ``rows`` are XProf's ``maxHeap`` (the buffers live at the peak, program order), each
    ``{bytes, unpadded_bytes, kind, instruction, shape, op_name, id}``; the small-buffer aggregate
    row has ``kind`` None and ``instruction`` its label.
    """
    rows = [{"bytes": round(r.get("logicalBufferSizeMib", 0) * _MIB),
             "unpadded_bytes": round(r.get("unpaddedShapeMib", 0) * _MIB),
             "kind": r.get("groupName"), "instruction": r.get("instructionName") or r.get("label"),
             "shape": _no_layout(r.get("shapeString")), "op_name": r.get("tfOpName") or "",
             "id": int(r.get("logicalBufferId", -1))}
            for r in doc.get("maxHeap", [])]
    return {
        "peak_bytes": _mib_bytes(doc, "peakHeapMib"),
        "peak_unpadded_bytes": _mib_bytes(doc, "peakUnpaddedHeapMib"),
        "peak_position": int(doc.get("peakHeapSizePosition", 0)),
        "heap_bytes": [round(v * _MIB) for v in doc.get("heapSizes", [])],
        "total_bytes": _mib_bytes(doc, "totalBufferAllocationMib"),
        "indefinite_bytes": _mib_bytes(doc, "indefiniteBufferAllocationMib"),
        "parameter_bytes": _mib_bytes(doc, "entryComputationParametersMib"),
        "live_out_bytes": _mib_bytes(doc, "maybeLiveOutMib"),
        "rows": rows,
    }


def memory_viewer(path: str | Path, module: str | None = None) -> dict[str, dict[str, Any]]:
    """XProf's memory viewer on one module of ``path`` (its key, ``"jit_step(6)"``), or on every
    module XProf extracts when ``module`` is None: ``{key: parse_memory_viewer(...)}``.

    XProf reads ``<run dir>/<key>.hlo_proto.pb``, which only its tool listing writes, so the input
    is staged in a temporary directory and listed first. A module XProf gives nothing for (it
    refuses traces it cannot replay) is left out.
    """
    from xprof.convert import raw_to_tool_data

    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="xprof_memory_") as tmp:
        staged = _stage_input(Path(path), Path(tmp))
        raw_to_tool_data.xspace_to_tool_names([str(staged)])
        keys = [module] if module else sorted(p.name[: -len(".hlo_proto.pb")] for p in Path(tmp).glob("*.hlo_proto.pb"))
        for key in keys:
            params = {"module_name": key, "use_saved_result": False}
            data, _content_type = raw_to_tool_data.xspace_to_tool_data([str(staged)], "memory_viewer", params)
            if isinstance(data, (bytes, bytearray)):
                data = bytes(data).decode("utf-8")
            if not data or not str(data).strip().startswith("{"):
                continue
            out[key] = parse_memory_viewer(json.loads(data))
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: ``xprof_oracle.py FILE [--tools a,b]`` prints :func:`xprof_numbers` as JSON."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of " + ",".join(TOOLS))
    args = ap.parse_args(argv)
    tools = tuple(t for t in args.tools.split(",") if t)
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        ap.error(f"unknown tools: {unknown}")
    if not os.path.exists(args.file):
        ap.error(f"no such file: {args.file}")
    print(json.dumps(xprof_numbers(args.file, tools), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
