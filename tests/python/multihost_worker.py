"""One process of a real jax.distributed job on CPU, for test_multihost.py.

    python multihost_worker.py INDEX COUNT PORT LOG_DIR [--processes 0,1] [--slow 3,4] [--late 0.5]
                               [--own-disk] [--die 2] [--report short|full]

Every process holds one row of a global array; each step multiplies its row and takes the mean
over the whole array (a cross-process all-reduce over gloo), so the processes meet every step.
Process 1 starts its loop `--late` seconds after process 0 and sleeps 80 ms inside the steps of
`--slow`: the straggler there. Captures steps 2-5 with jaxprof.Profiler.

`--own-disk`: each process works in LOG_DIR/machine<INDEX> with the relative log directory
"profiles", as the machines of a pod that share no file system. `--die N`: process N is killed
(SIGKILL) right after its last captured step, before its summary is shared; the others stop there
too (a dead process's collectives would never complete).
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import time
from pathlib import Path

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import jaxprof

ap = argparse.ArgumentParser()
ap.add_argument("index", type=int)
ap.add_argument("count", type=int)
ap.add_argument("port", type=int)
ap.add_argument("log_dir")
ap.add_argument("--processes", default="")
ap.add_argument("--slow", default="")
ap.add_argument("--late", type=float, default=0.0)
ap.add_argument("--steps", type=int, default=8)
ap.add_argument("--own-disk", action="store_true")
ap.add_argument("--die", type=int, default=-1)
ap.add_argument("--report", default="short")
a = ap.parse_args()
bench = os.environ.get("JAXPROF_BENCH_TIMES") == "1"  # benchmarks/pod_scale.py: wall-clock times in the output
logging.basicConfig(level=logging.INFO, format="%(created).6f %(levelname)s %(name)s: %(message)s" if bench else None)
log_dir = a.log_dir
if a.own_disk:
    machine = Path(a.log_dir) / f"machine{a.index}"
    machine.mkdir(parents=True, exist_ok=True)
    os.chdir(machine)
    log_dir = "profiles"
steps = 6 if a.die >= 0 else a.steps  # the capture's last step is 5

jax.distributed.initialize(coordinator_address=f"127.0.0.1:{a.port}", num_processes=a.count, process_id=a.index)
mesh = Mesh(np.array(jax.devices()), ("p",))
rows = NamedSharding(mesh, PartitionSpec("p"))


@jax.jit
def train_step(x):
    y = jax.numpy.tanh(x @ jax.numpy.swapaxes(x, 1, 2))
    return x * 0.999 + 0.001 * jax.numpy.mean(y)


x = jax.make_array_from_process_local_data(rows, np.full((1, 128, 128), a.index + 1.0, np.float32))
processes = [int(p) for p in a.processes.split(",")] if a.processes else None
slow = {int(s) for s in a.slow.split(",")} if a.slow else set()
prof = jaxprof.Profiler(log_dir, start_step=2, num_steps=4, processes=processes, report=a.report)
x = train_step(x).block_until_ready()  # compile outside the captured steps
if a.index == 1:
    time.sleep(a.late)
for i in range(steps):
    with prof.step(i):
        if a.index == 1 and i in slow:
            time.sleep(0.08)
        x = train_step(x)
        x.block_until_ready()
    if bench and i == 5:  # the capture's last step
        print(f"capture_end {time.time():.6f}", flush=True)
    if i == steps - 1 and a.index == a.die:
        os.kill(os.getpid(), signal.SIGKILL)
prof.close()
print("captures", [str(c.run_dir) for c in prof.captures], flush=True)
if a.die >= 0:  # JAX's shutdown barrier waits for the dead process until its heartbeat times out
    os._exit(0)
jax.distributed.shutdown()
