"""``jaxprof calibrate``: this machine's CPU peaks as XLA:CPU reaches them, cached for the roofline.

CPU profiles record no peak FLOP/s or memory bandwidth (XProf defines none either), so the
roofline and MFU of a CPU capture need them measured: the best of a few runs of a large f32
matmul (FLOP/s) and of a large sum (bytes read per second; an elementwise op writing a fresh
output measures page faults more than memory: 4 GB/s against 19 GB/s read on the development
machine), jitted and run by XLA:CPU. The result goes to ``<cache>/cpu_peaks`` (``$JAXPROF_CACHE_DIR``, else
``$XDG_CACHE_HOME/jaxprof``, else ``~/.cache/jaxprof``) as ``key=value`` lines; the ``jaxprof`` CLI
uses it for CPU profiles captured on a host of the same name.
"""
from __future__ import annotations

import argparse
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import _core


@dataclass(frozen=True)
class CpuPeaks:
    hostname: str
    peak_tflops: float
    peak_gbps: float


def cache_file() -> Path | None:
    """Where the calibration lives, by libjaxprof's rule (jp_cpu_peaks_path, the one the CLI and the
    viewer use) from this environment; None when it names no directory."""
    env = [os.environ.get(k, "") for k in ("JAXPROF_CACHE_DIR", "XDG_CACHE_HOME", "HOME")]
    try:
        return Path(_core.cpu_peaks_path(*env))
    except FileNotFoundError:
        return None


def _best_seconds(fn, arg, repeats: int) -> float:
    fn(arg).block_until_ready()  # compile and warm up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(arg).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(matmul_n: int = 2048, stream_mb: int = 256, repeats: int = 5) -> CpuPeaks:
    """Measures FLOP/s (2·n³ per n×n matmul) and bytes/s (a sum over stream_mb MiB: bytes read)."""
    import jax
    import jax.numpy as jnp

    a = jnp.ones((matmul_n, matmul_n), jnp.float32)
    flops = 2.0 * matmul_n**3 / _best_seconds(jax.jit(lambda x: x @ x), a, repeats)
    v = jnp.ones((stream_mb * 2**20 // 4,), jnp.float32)
    gbps = v.nbytes / _best_seconds(jax.jit(lambda x: x.sum()), v, repeats) / 1e9
    return CpuPeaks(socket.gethostname(), flops / 1e12, gbps)


def write(peaks: CpuPeaks, path: Path | None = None) -> Path:
    """Writes the calibration atomically (a temporary file renamed over the old one)."""
    path = path or cache_file()
    if path is None:
        raise FileNotFoundError("no cache directory for the calibration: set JAXPROF_CACHE_DIR or HOME")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = ("# CPU peaks measured by `jaxprof calibrate` (XLA:CPU, f32 matmul and sum)\n"
            f"hostname={peaks.hostname}\npeak_tflops={peaks.peak_tflops:.6g}\npeak_gbps={peaks.peak_gbps:.6g}\n")
    # A fresh random name (O_EXCL): a fixed "<file>.tmp" could be a planted link (issue 19).
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="jaxprof calibrate", description=__doc__.splitlines()[0])
    ap.add_argument("--matmul-n", type=int, default=2048, help="matmul size (default 2048)")
    ap.add_argument("--stream-mb", type=int, default=256, help="array size of the bandwidth run in MiB")
    args = ap.parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    peaks = measure(args.matmul_n, args.stream_mb)
    path = write(peaks)
    print(f"{peaks.hostname}: {peaks.peak_tflops * 1e3:.1f} GFLOP/s (f32 matmul), {peaks.peak_gbps:.1f} GB/s "
          f"(sum, read) -> {path}")
    return 0
