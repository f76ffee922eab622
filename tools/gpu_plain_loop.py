"""A plain training loop with no profiling code, for `jaxprof run` on a GPU (tools/gpu_check.sh):
the small transformer of gpu_capture.py, trained for 30 steps."""
from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).parent))
from gpu_capture import SIZES, forward, init_params  # noqa: E402


def make_train_step(size: dict) -> tuple:
    """The small transformer's train state and jitted train step (also tools/gpu_api_check.py's)."""
    params = init_params(jax.random.key(0), **size)
    opt = optax.adamw(1e-3)
    state = (params, opt.init(params))

    @jax.jit
    def train_step(state: tuple, tokens: jax.Array) -> tuple:
        p, s = state

        def loss_fn(p: dict) -> jax.Array:
            logits = forward(p, tokens[:, :-1], size["H"]).astype(jnp.float32)
            return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

        loss, grads = jax.value_and_grad(loss_fn)(p)
        updates, s = opt.update(grads, s, p)
        return (optax.apply_updates(p, updates), s), loss

    return state, train_step


def main() -> None:
    size = SIZES["small"]
    state, train_step = make_train_step(size)
    rng = np.random.default_rng(0)
    for step in range(30):
        tokens = jnp.asarray(rng.integers(0, size["V"], (size["B"], size["T"] + 1), dtype=np.int32))
        state, loss = train_step(state, tokens)
        if step % 10 == 0:
            print(f"step {step} loss {float(loss):.3f}", flush=True)


if __name__ == "__main__":
    main()
