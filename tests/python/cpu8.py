"""Eight XLA:CPU devices for the capture scripts the tests run in subprocesses (comm_capture.py,
straggler_capture.py): XLA_FLAGS names the device count here, before jax is imported, and
shard_map comes from where this JAX keeps it, with its replication check off (SHARD_MAP_OPTS).
Import it before jax."""
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

try:
    from jax import shard_map  # noqa: E402,F401
    SHARD_MAP_OPTS = {"check_vma": False}
except ImportError:  # older JAX
    from jax.experimental.shard_map import shard_map  # noqa: E402,F401
    SHARD_MAP_OPTS = {"check_rep": False}

N = 8
mesh = Mesh(np.array(jax.devices()), ("x",))  # all eight on one axis, "x"
