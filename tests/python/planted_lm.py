"""A Flax NNX + Optax language model whose training loop plants two problems (issue 31, item 13):

- a slow data loader: the batch of call SLOW_CALL of train_step takes SLOW_S seconds to load
  (a plain `time.sleep`, no annotation: what `jaxprof run` sees of a real slow loader);
- a metrics helper that recompiles every 5 steps: its input grows by one element every 5 calls.

    jaxprof run --steps 10:14 -- python tests/python/planted_lm.py

Under `jaxprof run` step i runs from the dispatch of call i to the dispatch of call i+1, so both
land in step 10: the helper compiles right after call 10's dispatch (10 // 5 is new), and the
batch of call 11 is loaded before call 11's dispatch. Prints one line, "planted step 10".
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402

from realistic_models import transformer_lm  # noqa: E402  (beside this file)

CALLS = 15          # calls of train_step: steps 10..13 are captured (call 14 ends the capture)
SLOW_CALL = 11      # its batch is the slow one: loaded during step 10
SLOW_S = 0.15       # how slow
RECOMPILE_EVERY = 5
VOCAB, D, HEADS, LAYERS, SEQ, BATCH = 256, 64, 4, 2, 32, 8


@nnx.jit
def train_step(model: Any, opt: Any, tokens: jax.Array) -> jax.Array:
    def loss_fn(m: Any) -> jax.Array:
        logits = m(tokens[:, :-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    opt.update(model, grads)
    return loss


@jax.jit
def summarize(values: jax.Array) -> jax.Array:
    """A metrics helper; its input grows every RECOMPILE_EVERY calls, so it recompiles then."""
    return jnp.tanh(values).sum()


def main() -> int:
    model = transformer_lm(VOCAB, D, HEADS, LAYERS, SEQ)
    opt = nnx.Optimizer(model, optax.adamw(3e-4), wrt=nnx.Param)
    rng = np.random.default_rng(0)

    def load_batch(call: int) -> jax.Array:
        if call == SLOW_CALL:
            time.sleep(SLOW_S)  # the slow loader
        return jnp.asarray(rng.integers(0, VOCAB, (BATCH, SEQ + 1)))

    for call in range(CALLS):
        loss = train_step(model, opt, load_batch(call))
        summarize(jnp.ones(8 + call // RECOMPILE_EVERY)).block_until_ready()
        loss.block_until_ready()
    print(f"planted step {SLOW_CALL - 1}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
