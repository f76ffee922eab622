"""Writes docs/fidelity.md: jaxprof and XProf side by side on every real capture in ../shared/captures.

    .venv/bin/python tools/fidelity.py            # rewrites docs/fidelity.md
    .venv/bin/python tools/fidelity.py --stdout   # prints it instead

Each number comes from running both tools on the same file now (XProf through its converters, as
tests/python/test_real_captures.py does); nothing here is typed in by hand except the reasons for
the differences that are known and deliberate (docs/design.md explains each).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("JAXPROF_REAL_CAPTURES") or ROOT.parent / "shared" / "captures")  # beside the project, never in it
OWN_GPU = ROOT / "tests" / "data" / "gpu"  # the project's own real captures (H200; README there)
sys.path.insert(0, str(ROOT / "tests" / "python"))
import hlo_truth  # noqa: E402
import raw_events  # noqa: E402
import xprof_oracle  # noqa: E402

JAXPROF = Path(sys.executable).parent / "jaxprof"

WHY = {
    "tf_ops": "XProf resolves no op: TensorFlow's kernels carry neither hlo_op nor tf_op (the names are on "
              "the derived TensorFlow Ops line, which XProf skips); jaxprof takes each kernel's framework op "
              "from its annotation",
    "no_steps": "XProf measures steps only from step markers; jaxprof falls back to repeated executions "
                "or dispatches (its method is named)",
    "gpu_idle": "XProf's overview gives device idle for TPU only; on GPU the number here is its op_profile's "
                "IDLE share, which counts as idle every kernel it cannot resolve in the HloProto and every copy; "
                "jaxprof counts all kernels and copies as busy",
    "extra_ops": "device work XProf leaves out of hlo_stats: kernels whose hlo_op is not in the HloProto "
                 "(ROCm's copyBuffer kernels; XLA's autotuner's candidate and redzone kernels during a compile, "
                 "which jaxprof marks `autotuning` and lists apart)",
    "command_buffers": "XProf names every kernel of a command buffer (a CUDA graph, XLA's default) by the graph "
                       "(hlo_op command_buffer_N), no HLO instruction, so its op tables are empty; jaxprof names "
                       "each kernel by the instruction it ran, matched in order to the module's schedule "
                       "(docs/design.md, \"Command buffers\")",
    "gpu_steps": "XProf's GPU step runs from the step's first grouped event to its last device event: the wait "
                 "after the last kernel (the step's float(loss)) is left out and the last step ends at its last "
                 "kernel; jaxprof's step is the StepTraceAnnotation's span, which the program's own timer "
                 "confirms to 0.1 ms (tests/data/gpu/meta.json)",
}


def raw_ops_why(path: Path) -> str:
    """Where XProf's op counts are not jaxprof's, what the raw events (hlo_truth.op_events) say."""
    raw = hlo_truth.op_events(path)
    graphs = {mod: len(evs) for (mod, _, op), evs in raw.items() if op.startswith("command_buffer")}
    mine = {(o["module"], o["name"]): (o["count"], o["total_ms"] * 1e3) for o in jaxprof_json("ops", path)["ops"]}
    plain = [(mod, op, evs) for (mod, _, op), evs in raw.items() if mod not in graphs]
    agree = sum(1 for mod, op, evs in plain if mine.get((mod, op), (0, 0))[0] == len(evs)
                and abs(mine[(mod, op)][1] - sum(d for _, d in evs)) <= 1e-3 * len(evs))
    said = (f"the raw events decide: jaxprof counts {agree} of the {len(plain)} ops of modules without command "
            "buffers as they do (occurrences and time)")
    if graphs:
        said += ("; in " + ", ".join(f"{m} {n} kernels ran in a CUDA graph" for m, n in graphs.items()) +
                 " (hlo_op command_buffer_N after runs with every kernel labelled): XProf counts only the labelled "
                 "runs, jaxprof names the graph's kernels too")
    return said


def command_buffer_capture(path: Path) -> bool:
    """Its kernels name a command buffer (hlo_op command_buffer_N) rather than an instruction."""
    import gzip
    from jax.profiler import ProfileData

    data = path.read_bytes()
    pd = ProfileData.from_serialized_xspace(gzip.decompress(data) if path.suffix == ".gz" else data)
    return any(str(dict(e.stats).get("hlo_op", "")).startswith("command_buffer")
               for p in pd.planes if p.name.startswith("/device:GPU") for line in p.lines for e in line.events)


def jaxprof_json(command: str, path: Path) -> dict[str, Any]:
    out = subprocess.run([str(JAXPROF), command, str(path), "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def verdict(ok: bool, why: str = "") -> str:
    return "agrees" if ok else f"differs: {why}" if why else "**differs**"


def compare(path: Path) -> list[tuple[str, str, str, str]]:
    """(what, XProf, jaxprof, verdict) rows for one capture."""
    x = xprof_oracle.xprof_numbers(path)
    j = jaxprof_json("report", path)
    rows = [("devices", f"{x['device_count']} ({x['device_type']})", f"{len(j['devices'])} ({j['platform']})",
             verdict(x["device_count"] == len(j["devices"])))]
    jk = jaxprof_json("kernels", path)["kernels"]
    xk = x["kernels"] or []
    n_x, n_j = sum(k["occurrences"] for k in xk), sum(k["count"] for k in jk)
    t_x, t_j = sum(k["total_us"] for k in xk), sum(k["total_ms"] * 1e3 for k in jk)
    rows.append(("kernel launches, total", f"{n_x}, {t_x:.3f} us", f"{n_j}, {t_j:.3f} us",
                 verdict(n_x == n_j and abs(t_x - t_j) <= n_x * 1e-3 + 1e-6)))
    xo = xprof_oracle.sum_by_name(x["hlo_ops"] or [], "occurrences", ("total_us",))
    jo = xprof_oracle.sum_by_name(jaxprof_json("ops", path)["ops"], "count", ("total_ms",), 1e3)
    if xo:
        same = [n for n, (c, t) in xo.items() if n in jo and jo[n][0] == c and abs(jo[n][1] - t) <= 0.01 * t + 1e-3]
        extra = sorted(set(jo) - set(xo))
        rows.append(("XLA ops (occurrences, total within 1%)", f"{len(xo)} ops", f"{len(same)} of them agree",
                     verdict(len(same) == len(xo), raw_ops_why(path) if len(same) < len(xo) else "")))
        if extra:
            rows.append(("ops only jaxprof lists", "-", ", ".join(extra)[:80], WHY["extra_ops"]))
    else:
        why = WHY["command_buffers"] if command_buffer_capture(path) else WHY["tf_ops"]
        rows.append(("XLA ops", "none", f"{len(jo)} ops, {sum(v[0] for v in jo.values())} occurrences",
                     f"differs: {why}" if j["platform"] == "gpu" and jo else verdict(not jo)))
    xs, js = x["steps"], j["step_summary"]
    if xs:
        rows.append(("steps (count, mean)", f"{xs['count']}, {xs['mean_ms']:.3f} ms",
                     f"{js['count']}, {js['mean_ms']:.3f} ms",
                     verdict(xs["count"] == js["count"] and abs(xs["mean_ms"] - js["mean_ms"]) <= 0.03 * xs["mean_ms"],
                             WHY["gpu_steps"] if j["platform"] == "gpu" and xs["count"] == js["count"] else "")))
    else:
        rows.append(("steps", "none measured", f"{js['count']} ({js['method']})",
                     "agrees" if not js["count"] else f"differs: {WHY['no_steps']}"))
    rows += dispatch_step_rows(path, js["method"])
    idle = x.get("device_idle_pct_exact")
    rows.append(("device idle, % of each device's first-to-last activity",
                 f"{idle:.2f}" if idle is not None else "not given", f"{j['device_idle_pct']:.2f}",
                 verdict(abs(idle - j["device_idle_pct"]) < 0.01, WHY["gpu_idle"] if j["platform"] == "gpu" else "")
                 if idle is not None else f"differs: {WHY['gpu_idle']}"))
    xm = {k: v["peak_bytes_in_use"] for k, v in (x["memory"] or {}).items()}
    jm = {m["allocator"].removeprefix("device "): m["peak_bytes"] for m in j["memory"]}
    rows.append(("memory peaks per allocator", ", ".join(f"{k} {v}" for k, v in sorted(xm.items()))[:70] or "none",
                 ", ".join(f"{k} {v}" for k, v in sorted(jm.items()))[:70] or "none", verdict(xm == jm)))
    return rows


def dispatch_step_rows(path: Path, method: str) -> list[tuple[str, str, str, str]]:
    """Steps inferred from dispatches against the raw events: each step from its dispatch to the
    end of the device work started before the next dispatch (XProf has no such steps)."""
    prefix = "host dispatches of PjitFunction("
    if not method.startswith(prefix):
        return []
    raw = raw_events.raw_dispatch_steps(path, method[len(prefix):-1])
    truth, prev = [], None  # a step starts at its dispatch, or where the previous one's work ended
    for a, b, dev in raw:
        start, end = a if prev is None else max(a, prev), dev if dev is not None and dev > b else b
        truth.append((end - start) / 1e6)
        prev = end
    ours = [s["duration_ms"] for s in jaxprof_json("steps", path)["steps"]]
    agree = sum(abs(t - o) <= 2e-3 for t, o in zip(truth, ours))
    no_dev = [s["step"] for s in jaxprof_json("steps", path)["steps"] if s["no_device_work"]]
    return [("step times (truth: raw events, dispatch to the end of its device work)",
             f"raw: {len(truth)} steps, " + ", ".join(f"{t:.2f}" for t in truth) + " ms",
             f"{agree} of {len(ours)} within 2 us" + (f"; steps {no_dev} had no device op" if no_dev else ""),
             verdict(agree == len(truth) == len(ours), "the raw reader counts a copy as device work; jaxprof "
                     "says a step with copies only had no device op" if no_dev else ""))]


def rate(value: float | None, scale: float = 1.0) -> str:
    return "-" if value is None else f"{value * scale:.4g}"


def program_costs(path: Path, top: int = 8) -> list[str]:
    """Markdown rows: per (module, program, op), the FLOP rate and bandwidth from the HLO truth
    (each program's HLO printed by XLA's parser, the raw events' times), jaxprof and XProf."""
    truth = {(p.module, p.program_id, n): (hlo_truth.flops(p, n), hlo_truth.nbytes(p, n))
             for p in hlo_truth.programs(path) for n in p.entry}
    events = hlo_truth.op_events(path)
    ours = {(o["module"], o["program_id"], o["name"]): o for o in jaxprof_json("ops", path)["ops"]}
    xprof = {(str(o["program_id"]), o["name"]): o for o in xprof_oracle.xprof_numbers(path, ("hlo_stats",))["hlo_ops"] or []}
    if not events:
        return ["", "The raw events name no HLO op and program (libtpu names its ops in the event metadata), so "
                "there is no per-program truth from the events here; tests/python/test_real_captures.py compares "
                "this capture's op rates with XProf's hlo_stats op by op."]
    out = ["", "Per compiled program: FLOP rate (TFLOP/s) and bandwidth (GB/s) of each op over its executions, the "
           f"{top} longest. Truth: the program's HLO printed by XLA's parser (tests/python/hlo_truth.py) over the "
           "raw events' time (ProfileData); runs = launches of the op's most launched kernel.", "",
           "| module (program) / op | runs | truth TFLOP/s | jaxprof | XProf | truth GB/s | jaxprof | XProf |",
           "|---|---|---|---|---|---|---|---|"]
    for key, evs in sorted(events.items(), key=lambda kv: -sum(d for _, d in kv[1]))[:top]:
        module, program, name = key
        row = ours.get(key) or ours.get((module, None, name))
        x = xprof.get((str(program), name))
        secs = sum(d for _, d in evs) / 1e6
        runs = hlo_truth.executions(evs)
        flops, nbytes = truth.get(key, (None, None))
        out.append(f"| {module} ({program}) / {name} | {runs} | "
                   f"{rate(flops and flops * runs / secs, 1e-12) if flops is not None else '-'} | "
                   f"{rate(row and row['gflops_per_s'], 1e-3)} | {rate(x and x['model_gflops_per_s'], 1e-3)} | "
                   f"{rate(nbytes * runs / secs, 1e-9) if nbytes is not None else '-'} | "
                   f"{rate(row and row['gbytes_per_s'])} | {rate(x and x['hbm_gib_per_s'], 2**30 / 1e9)} |")
    out += ["", "XProf gives a library GEMM (`__cublas$gemm` custom-call) no FLOPs and applies a multi-kernel op's "
            "FLOPs to each of its kernels (a cuDNN/MIOpen convolution: 2x); jaxprof counts both from the HLO, once "
            "per execution (docs/design.md, \"ops\"). Its GB/s are GiB/s converted here."]
    return out


def kpi_rows(path: Path) -> list[tuple[str, str, str, str]]:
    """Device utilization and memory bandwidth, with the peak used, beside XProf and the raw events."""
    j = jaxprof_json("report", path)
    k = {x["name"]: x for x in j["kpis"]}
    util, bw = k["device utilization"], k["memory bandwidth"]
    dev = j["devices"][0]
    x = xprof_oracle.xprof_numbers(path, ("op_profile",))
    idle = x.get("device_idle_pct_exact")
    return [("device utilization (KPI)", f"duty cycle {100 - idle:.2f}" if idle is not None else "not given",
             "n/a" if util["rating"] == "n/a" else f"{util['value']:.2f} [{util['rating']}]",
             "per device, as XProf's duty cycle (docs/design.md, findings)"),
            ("memory bandwidth (KPI), peak used", "-",
             "n/a" if bw["rating"] == "n/a" else f"{bw['value']:.2f} % [{bw['rating']}] of {dev['peak_gbps']:.5g} GB/s "
             f"({dev['peak_source']})", "a share above 100 % is rated 'above peak', never good")]


def render() -> str:
    out = ["# jaxprof and XProf on real captures", "",
           "Generated by `.venv/bin/python tools/fidelity.py` (XProf "
           f"{xprof_oracle_version()}): both tools run on each capture of `../shared/captures` (provenance in its "
           "README) and on the project's own H200 captures in `tests/data/gpu` (README there). "
           "`tests/python/test_real_captures.py` and `tests/python/test_gpu_captures.py` assert the same agreements "
           "in `make test`. "
           "Where the two differ on purpose, the reason is given; docs/design.md has the definitions.", ""]
    for path in sorted(REAL.glob("*.xplane.pb.gz")) + sorted(OWN_GPU.glob("*.xplane.pb.gz")):
        if path.name.startswith("mangled"):
            continue
        out += [f"## {path.name}", "", "| what | XProf | jaxprof | verdict |", "|---|---|---|---|"]
        out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in compare(path) + kpi_rows(path)]
        out += program_costs(path) if not command_buffer_capture(path) else [
            "", "Per-op rates against the HLO need XLA's own hlo_op label per kernel, which a command buffer's "
            "kernels lack: `h200_transformer_nocb` below is the same program with every kernel labelled."]
        out.append("")
    return "\n".join(out)


def xprof_oracle_version() -> str:
    try:
        from xprof import version
        return version.__version__
    except Exception:  # pragma: no cover
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stdout", action="store_true")
    text = render()
    if ap.parse_args().stdout:
        print(text)
    else:
        (ROOT / "docs" / "fidelity.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
