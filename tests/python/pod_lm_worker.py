"""One process of a realistic pod job on CPU, for test_pod.py: realistic_models.py's Flax NNX
transformer LM with Optax AdamW, trained data-parallel over every device of a jax.distributed job
(each process 2 XLA:CPU devices; the gradients all-reduced across processes); its step returns the
whole train state. Process 1's data loader is slow before step 3 (a planted 120 ms): the straggler
there. Each process works in ROOT/machine<INDEX> (no shared file system) under jaxprof.Profiler.

    python pod_lm_worker.py INDEX COUNT PORT ROOT
"""
from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

import jaxprof  # noqa: E402
from realistic_models import LM, transformer_lm  # noqa: E402

index, count, port, root = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
bench = os.environ.get("JAXPROF_BENCH_TIMES") == "1"  # benchmarks/pod_scale.py: wall-clock times in the output
logging.basicConfig(level=logging.INFO, format="%(created).6f %(levelname)s %(name)s: %(message)s" if bench else None)
machine = root / f"machine{index}"
machine.mkdir(parents=True, exist_ok=True)
os.chdir(machine)
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=count, process_id=index)

from flax import nnx  # noqa: E402
import optax  # noqa: E402

mesh = Mesh(np.array(jax.devices()), ("data",))
replicated, rows = NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec("data"))
model = transformer_lm(LM["vocab"], LM["d_model"], LM["heads"], LM["layers"], LM["seq"])
graphdef, params = nnx.split(model, nnx.Param)
tx = optax.adamw(3e-4)
local = {"params": params, "opt": tx.init(params), "step": jnp.zeros((), jnp.int32)}
state = jax.tree.map(lambda x: jax.make_array_from_callback(np.shape(x), replicated, lambda i: np.asarray(x)[i]), local)


def loss_fn(p, tokens):
    logits = nnx.merge(graphdef, p)(tokens[:, :-1])
    labels = tokens[:, 1:]
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


@jax.jit
def train_step(state, tokens):
    loss, grads = jax.value_and_grad(loss_fn)(state["params"], tokens)
    updates, opt = tx.update(grads, state["opt"], state["params"])
    return {"params": optax.apply_updates(state["params"], updates), "opt": opt, "step": state["step"] + 1}, loss


def batch(step: int) -> jax.Array:
    per_process = LM["batch"] * jax.local_device_count()
    tokens = np.random.default_rng(step * count + index).integers(0, LM["vocab"], (per_process, LM["seq"] + 1))
    return jax.make_array_from_process_local_data(rows, tokens.astype(np.int32))


state, loss = train_step(state, batch(0))  # compile outside the capture
jax.block_until_ready(loss)
prof = jaxprof.Profiler("profiles", start_step=2, num_steps=3)
for step in range(1, 6):
    with prof.step(step):
        if index == 1 and step == 3:
            time.sleep(0.12)  # a slow loader on this process
        state, loss = train_step(state, batch(step))
        jax.block_until_ready(loss)
    if bench and step == 4:  # the capture's last step
        print(f"capture_end {time.time():.6f}", flush=True)
prof.close()
print("leaves", len(jax.tree.leaves(state)), flush=True)
jax.distributed.shutdown()
