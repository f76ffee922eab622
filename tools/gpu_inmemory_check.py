"""Device check for issue 35 (run by tools/gpu_check.sh's build, or alone): a GPU step captured with
jaxprof.profile() in memory, its answers against the same capture saved and loaded from the file,
and `jaxprof sql` / `export --format sqlite` on the saved file against JAX's ProfileData."""
from __future__ import annotations

import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp

import jaxprof


def main(jp: str) -> None:
    print("devices", jax.devices())
    k = jax.random.PRNGKey(0)
    w = jax.random.normal(k, (2048, 2048), jnp.bfloat16)

    @jax.jit
    def step(w, x):
        with jax.named_scope("mlp"):
            h = jax.nn.gelu(x @ w)
        return w - 1e-3 * (h.T @ x).astype(w.dtype)

    x = jnp.ones((1024, 2048), jnp.bfloat16)
    w = step(w, x).block_until_ready()
    with jaxprof.profile() as prof:
        for i in range(5):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                w = step(w, x)
        w.block_until_ready()
    print("captured", prof)
    out = Path(tempfile.mkdtemp())
    saved = prof.save(out)
    print("saved", saved)
    from_file = jaxprof.load(saved)
    for table in ("ops", "steps", "kernels", "devices", "findings"):
        same = prof.table(table) == from_file.table(table)
        print(f"in-memory == file: {table}: {same} ({len(prof.table(table))} rows)")
    print(prof.report(top=5))
    raw = collections.Counter()
    for plane in jax.profiler.ProfileData.from_file(str(saved)).planes:
        for line in plane.lines:
            for ev in line.events:
                raw[plane.name] += 1
    q = subprocess.run([jp, "sql", str(saved), "SELECT plane, count(*) AS n FROM events GROUP BY plane", "--json"],
                       capture_output=True, text=True)
    got = {r["plane"]: r["n"] for r in json.loads(q.stdout)} if q.returncode == 0 else q.stderr
    print("sql events per plane == ProfileData:", got == dict(raw), got)
    db = out / "run.db"
    e = subprocess.run([jp, "export", str(saved), "--format", "sqlite", "-o", str(db)], capture_output=True, text=True)
    print("export sqlite rc", e.returncode, e.stderr.strip())
    q = subprocess.run([jp, "sql", str(db), "SELECT step, hlo_op, count(*) AS kernels, round(sum(dur_ms), 3) AS ms "
                        "FROM events WHERE device IS NOT NULL AND hlo_op IS NOT NULL GROUP BY step, hlo_op "
                        "ORDER BY ms DESC LIMIT 6"], capture_output=True, text=True)
    print(q.stdout, q.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
