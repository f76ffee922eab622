"""jaxprof's own capture API on a GPU: Profiler (step schedule, background report) and trace.

Run where JAX has a GPU, with jaxprof importable (`PYTHONPATH=DIR python3 tools/gpu_api_check.py OUT`).
Prints what each capture wrote and the report jaxprof made of it; exits 1 when a capture is missing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import jax
import numpy as np

import jaxprof

sys.path.insert(0, str(Path(__file__).parent))
from gpu_capture import SIZES  # noqa: E402
from gpu_plain_loop import make_train_step  # noqa: E402


def main() -> int:
    out = Path(sys.argv[1])
    size = SIZES["small"]
    state, step = make_train_step(size)

    rng = np.random.default_rng(0)
    prof = jaxprof.Profiler(out / "scheduled", start_step=3, num_steps=3, report=True)
    for i in range(8):
        with prof.step(i):
            tokens = jax.device_put(rng.integers(0, size["V"], (size["B"], size["T"] + 1), dtype=np.int32))
            state, loss = step(state, tokens)
            float(loss)
    prof.close()
    prof.wait_for_reports()
    print("Profiler captures:", [str(c.step_dir) for c in prof.captures])

    with jaxprof.trace(out / "traced", name="three_steps", perfetto=True) as t:
        for _ in range(3):
            state, loss = step(state, tokens)
    print("trace run_dir:", t.run_dir, sorted(p.name for p in t.run_dir.iterdir()) if t.run_dir else None)
    if t.run_dir is None or not prof.captures:
        return 1
    t0 = time.perf_counter()
    jaxprof.report(str(t.run_dir))
    print(f"report in {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
