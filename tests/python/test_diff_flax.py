"""`jaxprof diff` across a Flax renumbering, on two real CPU captures: an MLP (Dense_0..Dense_2)
and the same MLP with one Dense inserted after the first, trained with Optax. Flax names layers
by creation order, so the insertion renumbers the later ones (Dense_1 -> Dense_2, Dense_2 ->
Dense_3) and hands the name Dense_1 to the new layer; XLA renumbers the ops too. The layers of
both runs must pair with each other, and the inserted layer's ops must be added."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
import pytest

import jaxprof

from conftest import run_jaxprof

IN, OUT, BATCH, STEPS = 64, 10, 128, 4
BASE_WIDTHS = (256, 128, OUT)      # Dense_0: 64->256, Dense_1: 256->128, Dense_2: 128->10
NEW_WIDTHS = (256, 256, 128, OUT)  # the same, with a 256->256 Dense inserted as Dense_1
# Which new layer each base layer became; the new Dense_1 is the inserted one.
RENUMBERED = {"Dense_0": "Dense_0", "Dense_1": "Dense_2", "Dense_2": "Dense_3"}
INSERTED = "Dense_1"
LAYER = re.compile(r"(?:^|/)MLP/(Dense_\d+)(?:/|$)")


class MLP(nn.Module):
    """Dense layers with a relu between them; Flax names them Dense_0, Dense_1, ..."""
    widths: tuple[int, ...]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i, width in enumerate(self.widths):
            x = nn.Dense(width)(x)
            if i < len(self.widths) - 1:
                x = nn.relu(x)
        return x


def capture(log_dir: Path, widths: tuple[int, ...]) -> Path:
    """STEPS jitted Adam steps of an MLP with these widths (compiled before the capture)."""
    model, tx = MLP(widths), optax.adam(1e-3)
    x, y = jnp.ones((BATCH, IN)), jnp.ones((BATCH, OUT))
    params = model.init(jax.random.PRNGKey(0), x)
    opt_state = tx.init(params)

    @jax.jit
    def train(params: Any, opt_state: Any) -> tuple[Any, Any, jax.Array]:
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    params, opt_state, loss = train(params, opt_state)
    loss.block_until_ready()
    with jaxprof.Profiler(log_dir, start_step=1, num_steps=STEPS, report=False) as prof:
        for i in range(STEPS + 2):
            with prof.step(i):
                params, opt_state, loss = train(params, opt_state)
            loss.block_until_ready()
    return log_dir


def cli_json(*args: Any) -> dict[str, Any]:
    proc = run_jaxprof(*map(str, args), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def layer(scope: str) -> str | None:
    """"Dense_2" for an op or scope under MLP/Dense_2, else None."""
    found = LAYER.search(scope)
    return found.group(1) if found else None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both captures, each run's ops by name (from `jaxprof ops`), and the diff."""
    root = tmp_path_factory.mktemp("flax")
    base, new = capture(root / "base", BASE_WIDTHS), capture(root / "new", NEW_WIDTHS)
    return {
        "base": base,
        "new": new,
        "base_ops": {o["name"]: o for o in cli_json("ops", base)["ops"]},
        "new_ops": {o["name"]: o for o in cli_json("ops", new)["ops"]},
        "diff": cli_json("diff", base, new),
    }


def test_captures_hold_the_renumbered_layers(runs: dict[str, Any]) -> None:
    """The premise: Flax renumbered the layers, and XLA named some ops of different layers alike."""
    base_layers = {layer(o["scope"]) for o in runs["base_ops"].values()} - {None}
    new_layers = {layer(o["scope"]) for o in runs["new_ops"].values()} - {None}
    assert base_layers == {"Dense_0", "Dense_1", "Dense_2"}
    assert new_layers == {"Dense_0", "Dense_1", "Dense_2", "Dense_3"}
    # A name pairing would be wrong: some op name of the base's Dense_2 now belongs to another layer.
    moved = [n for n, o in runs["base_ops"].items()
             if layer(o["scope"]) == "Dense_2" and n in runs["new_ops"]
             and layer(runs["new_ops"][n]["scope"]) != "Dense_3"]
    assert moved, "XLA kept every name: the capture does not exercise renumbered ops"


def test_layers_in_both_runs_pair_with_each_other(runs: dict[str, Any]) -> None:
    base_ops, new_ops, diff = runs["base_ops"], runs["new_ops"], runs["diff"]
    paired = [r for r in diff["ops"] if r["change"] not in ("added", "removed")]
    layer_pairs = set()
    for r in paired:
        was, now = layer(base_ops[r["base_name"]]["scope"]), layer(r["scope"])
        # Nothing is paired across layers, nor a layer op with an op outside the layers.
        assert (was is None) == (now is None), r
        if was is None:
            continue
        assert RENUMBERED[was] == now, (r, base_ops[r["base_name"]]["scope"])
        # ... and the two do the same work per occurrence.
        b, n = base_ops[r["base_name"]], new_ops[r["name"]]
        assert b["flops"] / b["count"] == n["flops"] / n["count"], r
        assert b["op_name"].replace(was, now) == n["op_name"], r
        layer_pairs.add((was, now))
    assert layer_pairs == set(RENUMBERED.items())
    # Every op of a base layer found its partner: none is removed.
    for name, op in base_ops.items():
        if layer(op["scope"]):
            [row] = [r for r in diff["ops"] if r["base_name"] == name]
            assert row["change"] != "removed", row


def test_base_dense_2_dot_pairs_with_new_dense_3_dot(runs: dict[str, Any]) -> None:
    """The issue's example: the output layer's forward matmul, by its op_name after renumbering."""
    base_ops, diff = runs["base_ops"], runs["diff"]
    [forward] = [n for n, o in base_ops.items()
                 if o["op_name"].endswith("jvp(MLP)/Dense_2/dot_general") and "transpose" not in o["op_name"]]
    [row] = [r for r in diff["ops"] if r["base_name"] == forward]
    new_op = runs["new_ops"][row["name"]]
    assert new_op["op_name"] == base_ops[forward]["op_name"].replace("Dense_2", "Dense_3")
    assert row["scope"].endswith("MLP/Dense_3") and row["match"] in ("name", "op_name")


def test_inserted_layer_is_added(runs: dict[str, Any]) -> None:
    diff = runs["diff"]
    inserted = [r for r in diff["ops"] if layer(r["scope"]) == INSERTED]
    assert any("matmul" in r["category"] for r in inserted), inserted
    for r in inserted:
        assert (r["change"], r["match"], r["base_name"], r["base_ms"]) == ("added", "none", "", 0), r
    # Its ops are the only added ops under the layers (the rest of the added ops are its relu and
    # its parameters' Adam updates, outside any layer scope).
    assert {layer(r["scope"]) for r in diff["ops"] if r["change"] == "added"} <= {INSERTED, None}
    assert diff["summary"]["ops"]["removed"] == 0


def test_scope_rows_follow_the_renumbering(runs: dict[str, Any]) -> None:
    rows = {r["name"]: r for r in runs["diff"]["scopes"] if r["category"] == "device" and layer(r["name"])}
    by_layer = {layer(name): r for name, r in rows.items() if name.endswith(layer(name))}
    assert set(by_layer) == {"Dense_0", "Dense_1", "Dense_2", "Dense_3"}
    assert by_layer[INSERTED]["change"] == "added" and by_layer[INSERTED]["base_name"] == ""
    for was, now in RENUMBERED.items():
        row = by_layer[now]
        assert row["change"] != "added" and row["base_name"].endswith("MLP/" + was), row
        assert row["base_name"].replace(was, now) == row["name"], row


def test_text_and_html_name_the_old_layer(runs: dict[str, Any], tmp_path: Path) -> None:
    """A renumbered scope is shown with the path it had: "train/MLP/Dense_3 (was train/MLP/Dense_2)"."""
    [row] = [r for r in runs["diff"]["scopes"] if r["name"].endswith("MLP/Dense_3")]
    proc = run_jaxprof("diff", runs["base"], runs["new"], "--top", "100", "--width", "250")
    assert proc.returncode == 0, proc.stderr
    scopes = proc.stdout.split("\nScopes by change in self time per step")[1].split("\nFindings")[0]
    lines = [line for line in scopes.splitlines() if f" {row['name']} (was {row['base_name']}) " in line]
    assert len(lines) == 1, scopes
    out = tmp_path / "diff.html"
    assert run_jaxprof("diff", runs["base"], runs["new"], "--html", out).returncode == 0
    page = re.sub(r"<wbr>", "", out.read_text(encoding="utf-8"))
    assert re.search(f'<code class="scope">{re.escape(row["name"])}</code> <small>was '
                     f'<code class="base-name">{re.escape(row["base_name"])}</code></small>', page)
