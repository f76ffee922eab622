"""Remote capture: ``jaxprof capture ADDR --duration DUR [--out DIR]``.

A running JAX process that called ``jax.profiler.start_server(port)`` serves TSL's gRPC
ProfilerService. The client that asks it for a trace ships with xprof (JAX's own
``jax.collect_profile`` calls the same ``_pywrap_profiler_plugin.trace``), so capture needs the
``xprof`` package; nothing else of xprof is used. The profiled process writes the trace itself,
into ``DIR/plugins/profile/<run>/<addr>.xplane.pb`` on its own file system: the same machine, or a
directory both machines share.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from . import _core
from .runs import find_runs

DEFAULT_ATTEMPTS = 3
TRACER_LEVELS = {"host_tracer_level": 2, "device_tracer_level": 1, "python_tracer_level": 1}


class CaptureError(RuntimeError):
    """The remote process gave no trace (unreachable, no profiler server, or nothing ran)."""


def _client() -> Any:
    try:
        from xprof.convert import _pywrap_profiler_plugin
    except ImportError as e:
        raise CaptureError("jaxprof capture needs the xprof package for its gRPC profiler client "
                           "(pip install xprof; tested with xprof 2.24.2 and JAX 0.10.2)") from e
    return _pywrap_profiler_plugin


def normalize_address(addr: str) -> str:
    """``grpc://host:port``, ``host:port`` or a bare port (on 127.0.0.1) -> ``host:port``."""
    addr = addr.removeprefix("grpc://")
    if addr.isdigit():
        return f"127.0.0.1:{addr}"
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CaptureError(f"{addr!r} is not HOST:PORT or PORT")
    return addr


@contextlib.contextmanager
def _native_output_to(log: Path) -> Iterator[None]:
    """Sends what the native client prints (fds 1 and 2) to `log` instead of the terminal."""
    sys.stdout.flush(), sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log, "wb") as f:
        os.dup2(f.fileno(), 1), os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1), os.dup2(saved[1], 2)
            os.close(saved[0]), os.close(saved[1])


def _reason(log: Path) -> str:
    """The client's own words for a failure: its first UNAVAILABLE/DEADLINE/... line."""
    for line in log.read_text(errors="replace").splitlines():
        for key in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "FAILED_PRECONDITION", "INTERNAL"):
            if key in line:
                return line[line.index(key):].strip()
    return ""


def capture(addr: str, duration_ms: int, out: str | os.PathLike[str] = "profiles", *,
            attempts: int = DEFAULT_ATTEMPTS, options: dict[str, int] | None = None) -> Path:
    """Traces the process serving at `addr` for `duration_ms` and returns the new run directory
    under `out`. Raises CaptureError with the reason when no trace comes back."""
    if duration_ms <= 0 or attempts <= 0:
        raise CaptureError("--duration and --attempts must be positive")
    client, target = _client(), normalize_address(addr)
    out = Path(out).resolve()
    started_ns = time.time_ns()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "client.log"
        try:
            with _native_output_to(log):
                client.trace(target, str(out), "", True, duration_ms, attempts, {**TRACER_LEVELS, **(options or {})})
        except RuntimeError as e:
            why = _reason(log) or str(e)
            raise CaptureError(f"no trace from {target} after {attempts} attempt(s): {why}. Is the process "
                               "running, and did it call jax.profiler.start_server(PORT)?") from e
    written = [r for r in (find_runs(out) if out.is_dir() else []) if r.mtime_ns >= started_ns - 1_000_000_000]
    if not written:  # (1 s of slack: file times may be coarser than the clock)
        raise CaptureError(f"{target} answered but wrote no profile under {out} (it writes on its own file "
                           "system: give --out a directory the profiled process can write and this one can read)")
    return written[-1].path


def _duration_ms(text: str) -> int:
    """--duration as every jaxprof option reads a duration (bare numbers: seconds), in whole ms."""
    try:
        ms = round(_core.duration_parse(text, 1.0) * 1000)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if ms < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: need at least 1ms")
    return ms


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="jaxprof capture", description="Capture a trace from a running JAX "
                                 "process that called jax.profiler.start_server(PORT), then print its report.")
    ap.add_argument("addr", help="HOST:PORT of the profiler server, or PORT on this machine")
    ap.add_argument("--duration", type=_duration_ms, default=1000, metavar="DUR",
                    help="how long to trace (500ms, 2s; bare numbers are seconds; default 1s)")
    ap.add_argument("--duration-ms", type=int, dest="old_duration_ms", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default="profiles", help="log directory for the run (default ./profiles)")
    ap.add_argument("--attempts", type=int, default=DEFAULT_ATTEMPTS, help="tries while nothing is traced")
    ap.add_argument("--no-report", action="store_true", help="only capture; print the run directory")
    for name, level in TRACER_LEVELS.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=level, help=f"default {level}")
    a = ap.parse_args(argv)
    if a.old_duration_ms is not None:
        print("jaxprof: capture --duration-ms is deprecated and will be removed: use --duration (e.g. 500ms)",
              file=sys.stderr)
        a.duration = a.old_duration_ms
    a.duration_ms = a.duration
    options = {name: getattr(a, name) for name in TRACER_LEVELS}
    print(f"jaxprof: capturing {a.duration_ms} ms from {a.addr} ...", file=sys.stderr, flush=True)
    try:
        run = capture(a.addr, a.duration_ms, a.out, attempts=a.attempts, options=options)
    except CaptureError as e:
        print(f"jaxprof capture: {e}", file=sys.stderr)
        return 2
    print(f"jaxprof: captured -> {run}", file=sys.stderr)
    if a.no_report:
        print(run)
        return 0
    from .analysis import report
    report(run, sys.stdout)
    return 0
