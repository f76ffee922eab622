"""The typed result rows (jaxprof.results, generated from the library's column descriptors): on the
committed capture tests/data/cpu_small.xplane.pb.gz every table method returns rows of its class
whose fields are exactly the JSON row's keys in order, with the JSON's values; rows still read as
mappings (as the dicts they replace); a `columns=` view leaves the other fields None."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jaxprof
from jaxprof import results

CPU_SMALL = Path(__file__).resolve().parents[1] / "data" / "cpu_small.xplane.pb.gz"


def _doc(p: jaxprof.Profile, section: str) -> dict:
    return json.loads(p.render(section, "json"))


def _same(rows: list, json_rows: list[dict], cls: type) -> None:
    assert rows and len(rows) == len(json_rows)
    for row, raw in zip(rows, json_rows):
        assert type(row) is cls
        assert [f.name for f in dataclasses.fields(row)] == list(raw)  # the JSON keys, in order
        for key, value in raw.items():
            have = row[key]
            if key == "stack":
                assert [f.to_dict() for f in have] == value
            else:
                assert have == value and getattr(row, key) == value, (cls.__name__, key)


def test_every_table_method_returns_its_generated_class() -> None:
    p = jaxprof.load(CPU_SMALL)
    report = _doc(p, "report")
    _same(p.ops(), report["ops"], results.Op)
    _same(p.steps(), report["steps"], results.Step)
    _same(p.scopes(), report["scopes"], results.Scope)
    _same(p.transfers(), report["transfers"], results.Transfer)
    _same(p.kpis(), report["kpis"], results.Kpi)
    _same(p.devices(), report["devices"], results.Device)
    _same(p.lines(), report["lines"], results.Line)
    _same(p.flame(), _doc(p, "flame")["flame"], results.FlameNode)
    _same(p.memory_modules(), [{k: m[k] for k in m if k not in ("kind_bytes", "buffers")} for m in report["modules"]],
          results.ModuleMemory)
    assert p.findings() == [results.Finding.from_json(f) for f in report["findings"]]
    assert p.memory() == [] and report["memory"] == []  # XLA:CPU records no allocator events
    assert p.compiles() == [] and report["compiles"] == []  # cpu_small holds no compile event
    assert results.TABLES["ops"] is results.Op and jaxprof.Buffer is results.Buffer and jaxprof.Frame is results.Frame


def test_rows_are_typed_and_read_as_mappings() -> None:
    p = jaxprof.load(CPU_SMALL)
    op = max(p.ops(), key=lambda o: o.self_ms)
    assert op.name == "ynn_fusion" and op["name"] == "ynn_fusion" and op.count == 3
    assert isinstance(op.flops, float) and op.flops == 3072.0  # a FLOP count is a number, typed float
    assert op.stack[0].line == 32 and op["stack"][0]["function"] == "train_step" and not op.stack[0].library
    assert "self_ms" in op and "nope" not in op and op.get("nope", 7) == 7
    assert dict(op)["category"] == op.category == "matmul fusion"
    try:
        op["nope"]
        raise AssertionError("an unknown key must raise KeyError")
    except KeyError:
        pass
    step = p.steps()[0]
    assert step.step == 0 and step.duration_ms == step["duration_ms"] > 0 and step.outlier in (True, False)
    buffer = p.memory_buffers()[0]
    assert buffer.module == p.memory_modules()[0].name and buffer.module_peak_bytes == p.memory_modules()[0].peak_bytes
    hosts = p.hosts()
    assert hosts["host_stats"] == [] and hosts["stragglers"] == [] and hosts["host_ops"] == {}  # one host


def test_a_columns_view_leaves_the_other_fields_none() -> None:
    op = jaxprof.load(CPU_SMALL).ops(columns="name,self_ms")[0]
    assert op.name == "ynn_fusion" and op.self_ms > 0
    assert op.count is None and op.stack is None and op.category is None
