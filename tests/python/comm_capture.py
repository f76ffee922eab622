"""A real 8-device XLA:CPU program for the communication tests: run as a script in a subprocess, as
XLA_FLAGS must name the device count before jax is imported. Captures 3 steps, each calling one
program per collective (psum, all_gather, psum_scatter, ppermute over all 8 devices, and psum over
groups of 4 devices), one whose compute can run beside its collective (independent of it) and one
whose cannot (the collective needs the matmul before it, the matmul after needs the collective).

    python comm_capture.py LOG_DIR
"""
import sys

from cpu8 import N, SHARD_MAP_OPTS, mesh, shard_map  # first: it sets XLA_FLAGS before jax loads

from functools import partial  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

ROWS, COLS = 256, 512  # per device: f32[256,512] = 512 KiB
mesh2 = Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))


def sharded(f, out=P("x"), m=mesh, inp=P("x")):
    return jax.jit(shard_map(f, mesh=m, in_specs=inp, out_specs=out, **SHARD_MAP_OPTS))


def c_psum(x):
    return jax.lax.psum(x, "x")


def c_gather(x):
    return jax.lax.all_gather(x, "x", tiled=True)


def c_scatter(x):
    return jax.lax.psum_scatter(x, "x", tiled=True)


def c_permute(x):
    return jax.lax.ppermute(x, "x", [(i, (i + 1) % N) for i in range(N)])


def c_groups(x):
    return jax.lax.psum(x, "b")


def c_overlap(x):
    w = x[:, :256]
    return jax.lax.psum(x, "x"), jnp.tanh(w.T @ w)


def c_serial(x):
    w = x[:, :256]
    h = jax.lax.psum(jnp.tanh(w.T @ w), "x")
    return jnp.tanh(h @ h)


PROGRAMS = [sharded(c_psum), sharded(c_gather), sharded(c_scatter), sharded(c_permute),
            sharded(c_groups, out=P(("a", "b")), m=mesh2, inp=P(("a", "b"))),
            sharded(c_overlap, out=(P("x"), P("x"))), sharded(c_serial)]
STEPS = 3


def main(log_dir: str) -> None:
    x = jnp.arange(N * ROWS * COLS, dtype=jnp.float32).reshape(N * ROWS, COLS) * 1e-6
    for f in PROGRAMS:  # compile outside the capture
        jax.block_until_ready(f(x))
    jax.profiler.start_trace(log_dir)
    for i in range(STEPS):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            for f in PROGRAMS:
                jax.block_until_ready(f(x))
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main(sys.argv[1])
