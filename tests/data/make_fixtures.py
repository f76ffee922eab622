"""Regenerates the committed profile fixtures in this folder (run from anywhere):

    .venv/bin/python tests/data/make_fixtures.py

cpu_small.xplane.pb.gz is a real JAX CPU capture kept deliberately small (python tracer off, a tiny
jitted train step, 3 steps) so the C tests can afford to parse every prefix of it under ASan.
The bytes differ from run to run (timestamps, thread ids); the tests only rely on the facts that
hold for any run: 3 StepTraceAnnotation steps numbered 0..2, XLA:CPU ops on /host:CPU, the
named_scope "fixture_loss" in their op names, and the /host:metadata plane with its HLO protos.
"""
from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

HERE = Path(__file__).resolve().parent
SCOPE = "fixture_loss"


@jax.jit
def train_step(w: jax.Array, x: jax.Array) -> jax.Array:
    with jax.named_scope(SCOPE):
        return w - 0.01 * jnp.tanh(x @ w)


def capture_cpu_small(out: Path) -> None:
    x = jnp.ones((8, 8)) * 0.5
    w = jnp.ones((8, 8))
    train_step(w, x).block_until_ready()  # compile outside the capture
    opts = jax.profiler.ProfileOptions()
    opts.python_tracer_level = 0
    opts.host_tracer_level = 2
    with tempfile.TemporaryDirectory() as tmp:
        jax.profiler.start_trace(tmp, profiler_options=opts)
        for i in range(3):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                w = train_step(w, x)
                w.block_until_ready()
        jax.profiler.stop_trace()
        files = sorted(Path(tmp).rglob("*.xplane.pb"))
        if len(files) != 1:
            sys.exit(f"expected one xplane file, found {files}")
        raw = files[0].read_bytes()
    # mtime=0 and no file name in the header: the gzip wrapper itself is reproducible.
    with open(out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as gz:
        gz.write(raw)
    print(f"{out.name}: {len(raw)} bytes raw, {out.stat().st_size} gzipped")


def main() -> None:
    capture_cpu_small(HERE / "cpu_small.xplane.pb.gz")


if __name__ == "__main__":
    main()
