"""A loop configured entirely by environment variables (or the same flags on the command line).

    PROFILE_ENABLED=1 PROFILE_DIR=profiles/env PROFILE_START_STEP=10 PROFILE_DURATION=3 \
        python examples/env_configured_loop.py
    python examples/env_configured_loop.py --enable_profiling --profiler_start_step 10
"""
from __future__ import annotations

import argparse

import jax

import jaxprof
from _model import batch, init, train_step


def main() -> None:
    parser = jaxprof.add_argparse_arguments(argparse.ArgumentParser(description=__doc__))
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    env_cfg = jaxprof.ProfilerConfig.from_env()
    cfg = jaxprof.ProfilerConfig.from_args(args, **vars(env_cfg))  # flags override the environment

    params = init(jax.random.PRNGKey(0))
    with jaxprof.Profiler.from_config(cfg) as prof:
        for step in range(args.steps):
            x, y = batch(step)
            with prof.step(step):
                params, loss = train_step(params, x, y)
    print("enabled:", cfg.enable_profiling, "captures:", [str(c.run_dir) for c in prof.captures])


if __name__ == "__main__":
    main()
