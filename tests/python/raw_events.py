"""Raw-event readers shared by the tests and tools/fidelity.py: the truth read from the xplane with
JAX's own ProfileData, never through jaxprof."""
from __future__ import annotations

import gzip
from pathlib import Path

import jax


def raw_planes(path: Path):
    data = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    return jax.profiler.ProfileData.from_serialized_xspace(data).planes


def raw_dispatch_steps(path: Path, fn: str):
    """Per top-level dispatch PjitFunction(fn): (start, end, end of device work started before the
    next dispatch), in ns, from the raw events."""
    disp, dev = [], []
    for plane in raw_planes(path):
        for line in plane.lines:
            for ev in line.events:
                if ev.name == f"PjitFunction({fn})":
                    disp.append((ev.start_ns, ev.start_ns + ev.duration_ns))
                elif plane.name.startswith("/device:") and line.name != "Steps" and "XLA Modules" not in line.name:
                    dev.append((ev.start_ns, ev.start_ns + ev.duration_ns))
    disp.sort()
    top = [d for i, d in enumerate(disp) if not (i and disp[i - 1][0] <= d[0] and d[1] <= disp[i - 1][1])]
    out = []
    for i, (a, b) in enumerate(top):
        nxt = top[i + 1][0] if i + 1 < len(top) else float("inf")
        ends = [e for s, e in dev if a <= s < nxt]
        out.append((a, b, max(ends) if ends else None))
    return out
