"""A tiny regression model shared by the examples (kept out of each example's way)."""
from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxprof


def init(key: jax.Array, width: int = 256) -> dict[str, jax.Array]:
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (64, width)) * 0.1, "w2": jax.random.normal(k2, (width, 1)) * 0.1}


@jax.jit
def train_step(params: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> tuple[dict[str, jax.Array], jax.Array]:
    def loss_fn(p: dict[str, jax.Array]) -> jax.Array:
        with jaxprof.scope("forward"):
            pred = jnp.tanh(x @ p["w1"]) @ p["w2"]
        return jnp.mean((pred - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    with jaxprof.scope("update"):
        params = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    return params, loss


def batch(step: int) -> tuple[jax.Array, jax.Array]:
    key = jax.random.PRNGKey(step)
    x = jax.random.normal(key, (128, 64))
    return x, jnp.sin(x[:, :1])
