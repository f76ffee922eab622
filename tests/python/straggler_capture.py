"""A real 8-device XLA:CPU program with one slow device, for the straggling_device finding: each
step runs a psum over all 8 devices after a branch on the device index, in which device 3 alone
does a chain of matmuls (about 30x the others' work). Run as a script in a subprocess, as XLA_FLAGS
must name the device count before jax is imported.

    python straggler_capture.py LOG_DIR
"""
import sys

from cpu8 import N, SHARD_MAP_OPTS, mesh, shard_map  # first: it sets XLA_FLAGS before jax loads

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

SLOW, ROWS = 3, 256
STEPS = 8


def heavy(w):
    for _ in range(30):
        w = jnp.tanh(w @ w)
    return w


def step(w):
    slow = jax.lax.axis_index("x") == SLOW
    w = jax.lax.cond(slow, heavy, lambda v: jnp.tanh(v), w)
    return jax.lax.psum(w, "x") * (1.0 / N)


program = jax.jit(shard_map(step, mesh=mesh, in_specs=P("x"), out_specs=P("x"), **SHARD_MAP_OPTS))


def main(log_dir: str) -> None:
    w = jnp.ones((N * ROWS, ROWS), dtype=jnp.float32) * 1e-3
    w = jax.block_until_ready(program(program(w)))  # compile outside the capture, for the output's sharding too
    jax.profiler.start_trace(log_dir)
    for i in range(STEPS):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            w = jax.block_until_ready(program(w))
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main(sys.argv[1])
