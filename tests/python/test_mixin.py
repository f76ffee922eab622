"""ProfilingMixin on a real trainer class."""
from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

import jaxprof
from jaxprof import ProfilerConfig, ProfilingMixin

from conftest import only_xplane, read_xplane


@dataclass
class TrainState:
    params: jax.Array
    num_steps: object  # a host int, or a JAX scalar


class Trainer(ProfilingMixin):
    def __init__(self, log_dir, start=2, num=2):
        self.profiling_config = ProfilerConfig(enable_profiling=True, profiling_dir=str(log_dir),
                                               profiler_start_step=start, profiler_num_steps=num)

    @staticmethod
    @jax.jit
    def update(params):
        return params * 0.99

    def train(self, state: TrainState, steps: int) -> TrainState:
        for _ in range(steps):
            with self.profile_context(state, name="train_step"):
                state = TrainState(self.update(state.params), state.num_steps + 1)
        self.close_profiler()
        return state


def test_profile_context_with_host_int_steps(tmp_path):
    trainer = Trainer(tmp_path)
    trainer.train(TrainState(jnp.ones(4), 0), 6)
    content = read_xplane(only_xplane(tmp_path))
    assert content.step_nums == [2, 3]
    assert "train_step" in content.names
    assert trainer.profiling_dir == tmp_path
    assert [s for s in range(6) if trainer.should_profile(s)] == [2, 3]


def test_profile_context_with_jax_scalar_steps(tmp_path):
    trainer = Trainer(tmp_path, start=1, num=1)
    trainer.train(TrainState(jnp.ones(4), jnp.int32(0)), 3)
    assert read_xplane(only_xplane(tmp_path)).step_nums == [1]


def test_profile_context_never_evaluates_a_traced_step(tmp_path):
    trainer = Trainer(tmp_path, start=0, num=1)

    @jax.jit
    def traced_step(params, num_steps):
        # num_steps is a tracer here: converting it to int would raise.
        with trainer.profile_context(TrainState(params, num_steps), name="inside_jit"):
            return params + 1

    out = traced_step(jnp.ones(2), jnp.int32(5))
    assert float(out[0]) == 2.0
    assert 'inside_jit' in traced_step.lower(jnp.ones(2), jnp.int32(5)).compile().as_text()
    trainer.close_profiler()


def test_mixin_reads_environment_without_explicit_config(tmp_path, monkeypatch):
    monkeypatch.setenv("PROFILE_ENABLED", "1")
    monkeypatch.setenv("PROFILE_DIR", str(tmp_path))
    monkeypatch.setenv("PROFILE_START_STEP", "1")

    class EnvTrainer(ProfilingMixin):
        pass

    trainer = EnvTrainer()
    assert trainer.profiling_dir == tmp_path
    assert trainer.should_profile(1) and not trainer.should_profile(0)
    assert isinstance(trainer.profiler, jaxprof.Profiler)
    trainer.close_profiler()
