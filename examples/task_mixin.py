"""A trainer class that profiles itself through ProfilingMixin."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import jax

import jaxprof
from _model import batch, init, train_step


@dataclass
class TrainState:
    params: dict[str, jax.Array]
    num_steps: int = 0


class Trainer(jaxprof.ProfilingMixin):
    def __init__(self, profiling_dir: str) -> None:
        self.profiling_config = jaxprof.ProfilerConfig(
            enable_profiling=True, profiling_dir=profiling_dir, profiler_start_step=5, profiler_num_steps=3)

    def fit(self, state: TrainState, steps: int) -> TrainState:
        for _ in range(steps):
            x, y = batch(state.num_steps)
            with self.profile_context(state, name="train_step"):
                params, _ = train_step(state.params, x, y)
                state = TrainState(params, state.num_steps + 1)
        self.close_profiler()
        return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", default="profiles/mixin")
    args = parser.parse_args()
    trainer = Trainer(args.out)
    state = trainer.fit(TrainState(init(jax.random.PRNGKey(0))), args.steps)
    print(f"trained {state.num_steps} steps; profiles in {trainer.profiling_dir}")
    print(f"look at it: jaxprof report {trainer.profiling_dir}  |  jaxprof view {trainer.profiling_dir}")


if __name__ == "__main__":
    main()
