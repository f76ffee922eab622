"""annotate/scope/trace_function: host events and HLO op_name scopes."""
from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp

import jaxprof

from conftest import only_xplane, read_xplane


def compiled_text(fn, *args) -> str:
    return fn.lower(*args).compile().as_text()


def test_scope_inside_jit_names_hlo_ops():
    @jax.jit
    def step(x):
        with jaxprof.annotate("attention_block"):
            y = jnp.tanh(x @ x)
        with jaxprof.scope("head"):
            return y.sum()

    text = compiled_text(step, jnp.ones((8, 8)))
    assert 'op_name="jit(step)/attention_block/' in text
    assert 'op_name="jit(step)/head/' in text


def test_decorated_function_called_in_jit_names_ops():
    @jaxprof.annotate
    def mlp_layer(x):
        return jax.nn.relu(x @ x)

    @jaxprof.trace_function
    def norm(x):
        return x / jnp.linalg.norm(x)

    @jax.jit
    def model(x):
        return norm(mlp_layer(x))

    text = compiled_text(model, jnp.ones((4, 4)))
    assert "mlp_layer/" in text and "norm/" in text


def test_decorator_preserves_function_identity():
    @jaxprof.annotate("custom", layer=3)
    def f(a: int, b: float = 2.0) -> float:
        """Adds."""
        return a + b

    assert f(1) == 3.0
    assert f.__name__ == "f" and f.__doc__ == "Adds."
    assert f.__wrapped__(1, 1.0) == 2.0
    assert inspect.signature(f) == inspect.signature(f.__wrapped__)
    assert list(inspect.signature(f).parameters) == ["a", "b"]


def test_methods_and_jitted_functions(tmp_path):
    class Model:
        def __init__(self):
            self.scale = 2.0

        @jaxprof.annotate
        def apply(self, x):
            return x * self.scale

    jitted = jaxprof.annotate("jitted_fn")(jax.jit(lambda x: x + 1))
    with jaxprof.trace(tmp_path):
        assert float(Model().apply(jnp.float32(2.0))) == 4.0
        assert float(jitted(jnp.float32(1.0))) == 2.0
    names = read_xplane(only_xplane(tmp_path)).names
    assert "test_methods_and_jitted_functions.<locals>.Model.apply" in names
    assert "jitted_fn" in names


def test_host_annotation_carries_stats(tmp_path):
    with jaxprof.trace(tmp_path):
        with jaxprof.annotate("load_batch", batch=7, source="disk"):
            jnp.ones(3).block_until_ready()
        with jaxprof.profile_scope("aliased_scope"):
            pass
    content = read_xplane(only_xplane(tmp_path))
    assert content.stats["load_batch"]["batch"] == 7
    assert content.stats["load_batch"]["source"] == "disk"
    assert "aliased_scope" in content.names


def test_annotate_context_manager_needs_a_name():
    import pytest

    with pytest.raises(TypeError, match="needs a name"):
        with jaxprof.annotate():
            pass
    with pytest.raises(TypeError, match="must be a string"):
        jaxprof.annotate(42)
