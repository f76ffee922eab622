"""Periodic profiling: capture 2 steps every 20 steps, at most 3 times, from step 5."""
from __future__ import annotations

import argparse

import jax

import jaxprof
from _model import batch, init, train_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=70)
    parser.add_argument("--out", default="profiles/periodic")
    args = parser.parse_args()

    params = init(jax.random.PRNGKey(0))
    with jaxprof.Profiler(args.out, start_step=5, num_steps=2, every_n_steps=20, max_profiles=3) as prof:
        for step in range(args.steps):
            x, y = batch(step)
            with prof.step(step):
                params, loss = train_step(params, x, y)
    print(f"{len(prof.captures)} captures:", [str(c.run_dir) for c in prof.captures])
    print(f"look at the newest: jaxprof report {args.out}  |  jaxprof view {args.out}")


if __name__ == "__main__":
    main()
