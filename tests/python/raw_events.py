"""Raw-event readers shared by the tests and tools/fidelity.py: the truth read from the xplane with
JAX's own ProfileData, never through jaxprof."""
from __future__ import annotations

import collections
import gzip
from pathlib import Path

import jax


def raw_planes(path: Path):
    data = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    return jax.profiler.ProfileData.from_serialized_xspace(data).planes


def raw_dispatch_steps(path: Path, fn: str):
    """Per top-level dispatch PjitFunction(fn): (start, end, end of its device work), in ns. Its
    device work: what its launch calls queued (a GPU event whose correlation_id names a host call
    made after this dispatch began and before the next one did), else (no correlation) the device
    activity that started before the next dispatch."""
    disp, dev, calls = [], [], {}
    for plane in raw_planes(path):
        for line in plane.lines:
            for ev in line.events:
                st = dict(ev.stats)
                if ev.name == f"PjitFunction({fn})":
                    disp.append((ev.start_ns, ev.start_ns + ev.duration_ns))
                elif plane.name.startswith("/host:") and "correlation_id" in st:
                    calls.setdefault(st["correlation_id"], ev.start_ns)
                elif plane.name.startswith("/device:") and line.name != "Steps" and "XLA Modules" not in line.name:
                    dev.append((ev.start_ns, ev.start_ns + ev.duration_ns, st.get("correlation_id")))
    disp.sort()
    top = [d for i, d in enumerate(disp) if not (i and disp[i - 1][0] <= d[0] and d[1] <= disp[i - 1][1])]
    out = []
    for i, (a, b) in enumerate(top):
        nxt = top[i + 1][0] if i + 1 < len(top) else float("inf")
        ends = [e for s, e, c in dev if a <= (calls[c] if c in calls else s) < nxt]
        out.append((a, b, max(ends) if ends else None))
    return out


def users_of(progs) -> dict[tuple[str, str], set[str]]:
    """(module, instruction) -> the instructions that take its result as an operand (HLO text)."""
    users: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for m, p in progs.items():
        for name, ins in p.instrs.items():
            for o in ins.operands:
                users[(m, o)].add(name)
    return users


def cpu_ops(path: Path, split: bool, users: dict[tuple[str, str], set[str]]):
    """XLA:CPU op events: (device, module, name, start_ns, end_ns). An asynchronous thunk ends at
    its "end:" event (the flow its _p names), but no later than the first start of an op that uses
    its result in the same run on the same device: the thread pool records the "end:" only when it
    next wakes, after the user had the value. An "end:" recorded after the module's next execution
    (module, run_id) began is no completion at all (the pool woke in the next run: seen on a loaded
    machine, a cond's end 10 ms into the next step); the thunk then keeps its own event's end."""
    ops, ends = [], {}
    for plane in raw_planes(path):
        for line in plane.lines:
            for ev in line.events:
                st = dict(ev.stats)
                if ev.name.startswith("end: ") and "_c" in st:
                    ends[st["_c"]] = ev.start_ns + ev.duration_ns
                elif "hlo_op" in st and "hlo_module" in st:
                    ops.append([st["device_ordinal"] if split else 0, st["hlo_module"], st["hlo_op"], ev.start_ns,
                                ev.start_ns + ev.duration_ns, st.get("_p"), st.get("run_id")])
    first: dict[tuple, int] = {}
    run_start: dict[tuple, int] = {}
    for d, m, n, s, _, _, run in ops:
        if run:
            first[(d, m, n, run)] = min(s, first.get((d, m, n, run), s))
            run_start[(m, run)] = min(s, run_start.get((m, run), s))
    by_module = collections.defaultdict(list)
    for (m, run), s in run_start.items():
        by_module[m].append((s, run))
    next_start = {}
    for m, runs in by_module.items():
        runs.sort()
        for (_, run), (s, _) in zip(runs, runs[1:]):
            next_start[(m, run)] = s

    def end_of(d, m, n, s, e, p, run) -> int:
        done = ends.get(p, e)
        if done <= e or (run and done > next_start.get((m, run), done)):
            return e
        ready = [first[(d, m, u, run)] for u in users.get((m, n), ()) if (d, m, u, run) in first and
                 first[(d, m, u, run)] > s] if run else []
        return max(e, min([done, *ready]))

    return [(d, m, n, s, end_of(d, m, n, s, e, p, run)) for d, m, n, s, e, p, run in ops]


# Device lines XLA derives from the events (not streams): left out of launch truths.
DERIVED_LINES = {"Steps", "XLA Modules", "XLA Ops", "TensorFlow Ops", "Framework Ops", "TensorFlow Name Scope",
                 "Framework Name Scope", "Launch Stats", "Source code", "CUPTI overhead"}


def raw_correlated(path: Path):
    """Both ends of each launch, from the raw events: the device events that carry a correlation_id
    as (plane, line, name, start_ns, end_ns, id) and the host calls by id as (name, start_ns,
    end_ns), the first call of an id."""
    dev, calls = [], {}
    for plane in raw_planes(path):
        for line in plane.lines:
            if plane.name.startswith("/device:") and line.name in DERIVED_LINES:
                continue
            for ev in line.events:
                st = dict(ev.stats)
                if "correlation_id" not in st:
                    continue
                c = int(st["correlation_id"])
                if plane.name.startswith("/host:"):
                    calls.setdefault(c, (ev.name, ev.start_ns, ev.start_ns + ev.duration_ns))
                elif plane.name.startswith("/device:"):
                    dev.append((plane.name, line.name, ev.name, ev.start_ns, ev.start_ns + ev.duration_ns, c))
    return dev, calls
