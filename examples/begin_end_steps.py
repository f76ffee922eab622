"""The begin_step/end_step style, for loops where a `with` block does not fit, plus on-demand capture."""
from __future__ import annotations

import argparse

import jax

import jaxprof
from _model import batch, init, train_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--out", default="profiles/begin_end")
    args = parser.parse_args()

    params = init(jax.random.PRNGKey(0))
    prof = jaxprof.Profiler(args.out, start_step=3, num_steps=3)
    try:
        for step in range(args.steps):
            prof.begin_step(step)
            with jaxprof.annotate("data"):
                x, y = batch(step)
            params, loss = train_step(params, x, y)
            prof.end_step()
            if step == 25:  # e.g. a slow step was noticed: capture the next two as well
                prof.capture_async(num_steps=2)
    finally:
        prof.close()
    for c in prof.captures:
        print(f"steps {c.steps} -> {c.run_dir}")


if __name__ == "__main__":
    main()
