"""``jaxprof demo``: train a small MLP on MNIST-shaped data and profile its steady state."""
from __future__ import annotations

import argparse
import gzip
import struct
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import jax
import jax.numpy as jnp
import numpy as np

from .annotate import annotate, scope
from .analysis import report
from .profiler import Capture, Profiler

Params = list[tuple[jax.Array, jax.Array]]


def synthetic_mnist(n: int = 8192, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """MNIST-shaped data (28x28 uint8 images, 10 classes) that a model can actually learn."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n).astype(np.int32)
    prototypes = rng.uniform(0, 255, size=(10, 28 * 28))
    noise = rng.normal(0, 255, size=(n, 28 * 28))
    images = np.clip(prototypes[labels] + noise, 0, 255).astype(np.uint8)
    return images.reshape(n, 28, 28), labels


def load_idx(path: Path) -> np.ndarray:
    """Reads one MNIST IDX file (optionally gzipped) into an array."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4:
        raise ValueError(f"{path}: too short for an IDX header ({len(data)} bytes)")
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic bytes {data[:4].hex()})")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path}: header truncated at byte {len(data)}")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    expected = header + int(np.prod(shape))
    if len(data) != expected:
        raise ValueError(f"{path}: {len(data)} bytes, expected {expected} for shape {shape}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def real_mnist(data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Loads ``train-images-idx3-ubyte`` and ``train-labels-idx1-ubyte`` (``.gz`` or not)."""
    def find(stem: str) -> Path:
        for name in (stem, stem + ".gz"):
            if (data_dir / name).exists():
                return data_dir / name
        raise FileNotFoundError(f"{data_dir}: no {stem} or {stem}.gz (MNIST IDX files)")

    images = load_idx(find("train-images-idx3-ubyte"))
    labels = load_idx(find("train-labels-idx1-ubyte")).astype(np.int32)
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise ValueError(f"{data_dir}: images {images.shape} and labels {labels.shape} do not match")
    return images, labels


def init_params(key: jax.Array, sizes: tuple[int, ...] = (784, 512, 256, 10)) -> Params:
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (n_in, n_out)) * jnp.sqrt(2.0 / n_in), jnp.zeros(n_out)))
    return params


def forward(params: Params, x: jax.Array) -> jax.Array:
    with scope("forward"):
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return x @ w + b


@annotate("loss")
def loss_fn(params: Params, x: jax.Array, y: jax.Array) -> jax.Array:
    logits = forward(params, x)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


@jax.jit
def train_step(params: Params, momentum: Params, x: jax.Array, y: jax.Array,
               lr: float = 0.01) -> tuple[Params, Params, jax.Array]:
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    with scope("update"):
        momentum = jax.tree.map(lambda m, g: 0.9 * m + g, momentum, grads)
        params = jax.tree.map(lambda p, m: p - lr * m, params, momentum)
    return params, momentum, loss


def batches(images: np.ndarray, labels: np.ndarray, batch: int, seed: int = 0) -> Iterator[tuple[Any, Any]]:
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(images))
        for i in range(0, len(order) - batch + 1, batch):
            idx = order[i:i + batch]
            with annotate("data"):
                x = images[idx].reshape(len(idx), -1).astype(np.float32) / 255.0
                yield jnp.asarray(x), jnp.asarray(labels[idx])


def run(steps: int, out: Path, data: Path | None, batch: int = 128) -> Capture | None:
    """Trains for ``steps`` steps, capturing steps 10..14 (or the last five if fewer), and reports."""
    images, labels = real_mnist(data) if data else synthetic_mnist()
    source = f"MNIST from {data}" if data else "synthetic MNIST-shaped data"
    start = min(10, max(1, steps - 5))
    num = min(5, steps - start)
    if num < 1:
        raise ValueError(f"--train-steps must be at least 2 (one warm-up step, one captured), got {steps}")
    print(f"jaxprof demo: MLP 784-512-256-10 on {source} ({len(images)} images), batch {batch}, "
          f"{steps} steps on {jax.devices()[0].platform.upper()}; capturing steps {start}-{start + num - 1}")
    params = init_params(jax.random.PRNGKey(0))
    momentum = jax.tree.map(jnp.zeros_like, params)
    stream = batches(images, labels, batch)
    t0 = time.perf_counter()
    with Profiler(out, start_step=start, num_steps=num, report=False) as prof:
        for step in range(steps):
            x, y = next(stream)
            with prof.step(step):
                params, momentum, loss = train_step(params, momentum, x, y)
            if step % 10 == 0 or step == steps - 1:
                print(f"  step {step:4d}  loss {float(loss):.4f}")
    print(f"trained {steps} steps in {time.perf_counter() - t0:.1f} s")
    capture = prof.captures[-1] if prof.captures else None
    if capture is None or capture.run_dir is None:
        print("no profile was written (see the warnings above)")
        return None
    print(f"\nprofile: {capture.run_dir}")
    print(f"  steps {capture.steps[0]}-{capture.steps[-1]} captured, mean {capture.mean_step_ms:.2f} ms/step")
    for f in sorted(capture.run_dir.iterdir()):
        print(f"  {f.name:40s} {f.stat().st_size / 1024:10.1f} KiB")
    print()
    report(capture.run_dir)
    print(f"\nmore: jaxprof ops|steps|scopes|findings {capture.run_dir}  (--json, --csv, --top, --filter)")
    return capture


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxprof demo", description=__doc__)
    parser.add_argument("--train-steps", type=int, default=30, metavar="N", help="training steps to run (default 30)")
    # --steps A:B is a step range in every other command; here it was the count: accepted for one release.
    parser.add_argument("--steps", type=int, dest="old_steps", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=Path("profiles"), help="log directory (default ./profiles)")
    parser.add_argument("--data", type=Path, default=None, help="directory with MNIST IDX files (no downloads)")
    args = parser.parse_args(argv)
    if args.old_steps is not None:
        print("jaxprof: demo --steps is deprecated and will be removed: use --train-steps", file=sys.stderr)
        args.train_steps = args.old_steps
    try:
        capture = run(args.train_steps, args.out, args.data)
    except (OSError, ValueError) as exc:
        print(f"jaxprof demo: {exc}")
        return 2
    return 0 if capture is not None else 1


if __name__ == "__main__":
    raise SystemExit(main())
