"""Captures realistic JAX programs on CPU into one log directory (issue 30): what a real training
step looks like to jaxprof, so the sanitizer suite (test_realistic.py) sees programs of that size.

    python tests/python/realistic_models.py LOG_DIR [NAME ...]

NAME (default: all) is one of:
  lm        a Flax NNX + Optax transformer language model, 6 layers; its jitted train_step returns
            the whole new train state (parameters, both Adam moments, step count, metrics):
            hundreds of arrays; 3 steps under jaxprof.Profiler (StepTraceAnnotation steps 2..4)
  cnn       a Flax linen CNN (conv, pooling, dense) trained with Optax; 2 steps under the Profiler
  tuple500  a jitted function returning a tuple of 500 arrays, under jaxprof.trace
  deep      a jitted function whose output is a pytree nested 12 tuples deep holding an
            f32[4096,4096,8] (512 MiB, zeros), whose name and named_scope are 1,000+ characters

Each capture is written to LOG_DIR/NAME/ (jaxprof's layouts) and its run directory is printed as
"NAME RUN_DIR". Runs in a subprocess of the tests so that JAX's memory stays out of pytest.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxprof  # noqa: E402

# The 1,000+ character names of `deep` (the tests look for them in the outputs).
LONG_FN_NAME = "deep_" + "abcdefghij" * 102       # 1,025 characters: jit_<this> is the HLO module
LONG_SCOPE = "scope_" + "012345678\u00e9" * 110   # 1,106 characters (1,216 bytes: e-acute is 2 in UTF-8),
                                                  # in every op_name under it
DEEP_LEVELS = 12
BIG_SHAPE = (4096, 4096, 8)                       # f32: 512 MiB, materialised once
TUPLE_N = 500
TUPLE_SHAPE = (64, 80)                            # f32: 20 KiB each, above memory's 16 KiB "small" row
LM = dict(vocab=512, d_model=64, heads=4, layers=6, seq=32, batch=4)


# ---- lm: Flax NNX transformer + Optax ------------------------------------------------------------

def transformer_lm(vocab: int, d: int, heads: int, layers: int, seq: int, seed: int = 0) -> Any:
    """A Flax NNX pre-norm transformer language model (also planted_lm.py's)."""
    from flax import nnx

    class Block(nnx.Module):
        """Pre-norm transformer block: causal self-attention, then an MLP."""

        def __init__(self, d: int, heads: int, rngs: nnx.Rngs) -> None:
            self.ln1 = nnx.LayerNorm(d, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=d, decode=False, rngs=rngs)
            self.ln2 = nnx.LayerNorm(d, rngs=rngs)
            self.up = nnx.Linear(d, 4 * d, rngs=rngs)
            self.down = nnx.Linear(4 * d, d, rngs=rngs)

        def __call__(self, x: jax.Array, mask: jax.Array) -> jax.Array:
            x = x + self.attn(self.ln1(x), mask=mask)
            return x + self.down(jax.nn.gelu(self.up(self.ln2(x))))

    class TransformerLM(nnx.Module):
        def __init__(self, vocab: int, d: int, heads: int, layers: int, seq: int, rngs: nnx.Rngs) -> None:
            self.tok = nnx.Embed(vocab, d, rngs=rngs)
            self.pos = nnx.Embed(seq, d, rngs=rngs)
            self.blocks = nnx.List([Block(d, heads, rngs) for _ in range(layers)])
            self.ln_f = nnx.LayerNorm(d, rngs=rngs)
            self.head = nnx.Linear(d, vocab, rngs=rngs)

        def __call__(self, tokens: jax.Array) -> jax.Array:
            x = self.tok(tokens) + self.pos(jnp.arange(tokens.shape[1]))
            mask = nnx.make_causal_mask(tokens)
            for block in self.blocks:
                x = block(x, mask)
            return self.head(self.ln_f(x))

    return TransformerLM(vocab, d, heads, layers, seq, nnx.Rngs(seed))


def lm_capture(out: Path) -> Path:
    from flax import nnx
    import optax

    model = transformer_lm(LM["vocab"], LM["d_model"], LM["heads"], LM["layers"], LM["seq"])
    graphdef, params = nnx.split(model, nnx.Param)
    tx = optax.adamw(3e-4)
    state = {"params": params, "opt": tx.init(params), "step": jnp.zeros((), jnp.int32)}

    def loss_fn(p: Any, tokens: jax.Array) -> tuple[jax.Array, jax.Array]:
        logits = nnx.merge(graphdef, p)(tokens[:, :-1])
        labels = tokens[:, 1:]
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
        return loss, (logits.argmax(-1) == labels).mean()

    @jax.jit
    def train_step(state: dict[str, Any], tokens: jax.Array) -> tuple[dict[str, Any], dict[str, jax.Array]]:
        """One step; returns the whole new train state and the metrics."""
        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(state["params"], tokens)
        updates, opt = tx.update(grads, state["opt"], state["params"])
        new = {"params": optax.apply_updates(state["params"], updates), "opt": opt, "step": state["step"] + 1}
        return new, {"loss": loss, "accuracy": acc, "grad_norm": optax.global_norm(grads)}

    tokens = jax.random.randint(jax.random.PRNGKey(1), (LM["batch"], LM["seq"] + 1), 0, LM["vocab"])
    state, metrics = train_step(state, tokens)  # compile outside the capture
    jax.block_until_ready(metrics)
    with jaxprof.Profiler(out, start_step=2, num_steps=3, report=False) as prof:
        for step in range(6):
            with prof.step(step):
                state, metrics = train_step(state, tokens)
            jax.block_until_ready(metrics)
    print(f"lm_outputs {len(jax.tree.leaves((state, metrics)))}", file=sys.stderr)
    return prof.captures[0].run_dir


# ---- cnn: Flax linen CNN + Optax -----------------------------------------------------------------

def cnn_capture(out: Path) -> Path:
    import flax.linen as nn
    import optax

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            x = nn.relu(nn.Conv(16, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            x = nn.relu(nn.Conv(32, (3, 3))(x))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
            x = nn.relu(nn.Dense(64)(x.reshape(x.shape[0], -1)))
            return nn.Dense(10)(x)

    model, tx = CNN(), optax.sgd(1e-2, momentum=0.9)
    x = jax.random.normal(jax.random.PRNGKey(0), (16, 28, 28, 1))
    y = jnp.arange(16) % 10
    params = model.init(jax.random.PRNGKey(1), x)
    opt_state = tx.init(params)

    @jax.jit
    def train_step(params: Any, opt_state: Any) -> tuple[Any, Any, jax.Array]:
        def loss_fn(p: Any) -> jax.Array:
            return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x), y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    params, opt_state, loss = train_step(params, opt_state)
    loss.block_until_ready()
    with jaxprof.Profiler(out, start_step=1, num_steps=2, report=False) as prof:
        for step in range(4):
            with prof.step(step):
                params, opt_state, loss = train_step(params, opt_state)
            loss.block_until_ready()
    return prof.captures[0].run_dir


# ---- tuple500: a jitted function returning 500 arrays --------------------------------------------

def tuple500_capture(out: Path) -> Path:
    @jax.jit
    def five_hundred(x: jax.Array) -> tuple[jax.Array, ...]:
        return tuple(x * i + i for i in range(TUPLE_N))

    x = jnp.ones(TUPLE_SHAPE)
    jax.block_until_ready(five_hundred(x))
    with jaxprof.trace(out, name="tuple500") as t:
        jax.block_until_ready(five_hundred(x))
    return Path(t.run_dir)


# ---- deep: nested pytrees, a long shape, 1,000+ character names -----------------------------------

def nest(leaves: list[jax.Array]) -> Any:
    """(a, (b, (c, ...))): DEEP_LEVELS tuples deep, a leaf at every level."""
    tree: Any = leaves[-1]
    for leaf in reversed(leaves[:-1]):
        tree = (leaf, (tree,))
    return tree


def deep_capture(out: Path) -> Path:
    def body(x: jax.Array) -> Any:
        with jax.named_scope(LONG_SCOPE):
            big = jnp.broadcast_to(x[0, 0], BIG_SHAPE) * 0.0  # zeros; one 512 MiB buffer
            leaves = [jnp.tanh(x * i) for i in range(DEEP_LEVELS)]
        return nest(leaves + [big])

    body.__name__ = body.__qualname__ = LONG_FN_NAME
    fn = jax.jit(body)
    x = jnp.ones((4, 4))
    jax.block_until_ready(fn(x))
    with jaxprof.trace(out, name="deep") as t:
        result = fn(x)
        jax.block_until_ready(result)
    del result
    return Path(t.run_dir)


CAPTURES: dict[str, Callable[[Path], Path]] = {
    "lm": lm_capture, "cnn": cnn_capture, "tuple500": tuple500_capture, "deep": deep_capture}


def main(argv: list[str]) -> int:
    log_dir = Path(argv[0])
    for name in argv[1:] or list(CAPTURES):
        t0 = time.perf_counter()
        run_dir = CAPTURES[name](log_dir / name)
        print(f"{name} {run_dir}", flush=True)
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
