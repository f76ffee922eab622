"""Result rows as pandas DataFrames. pandas is optional: this module imports it, and only
``Profile.to_pandas`` imports this module."""
from __future__ import annotations

from dataclasses import fields
from typing import Any, Sequence

from ._row import Row

# a field's annotation (``from __future__ import annotations``: a string) -> pandas' nullable dtype
_DTYPES = {"int": "Int64", "float": "Float64", "bool": "boolean", "str": "string"}


def _dtype(annotation: Any) -> str:
    base = str(annotation).replace(" ", "").split("|")[0]
    return _DTYPES.get(base, "object")


def frame(cls: type[Row] | None, rows: Sequence[Row]) -> Any:
    """A DataFrame of rows of one class: its fields in order, each column of its field's type."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError("to_pandas needs pandas: pip install pandas") from exc
    if cls is None:
        cls = type(rows[0]) if rows else None
    if cls is None:
        return pd.DataFrame()
    columns = {}
    for f in fields(cls):
        values = [getattr(r, f.name) for r in rows]
        dtype = _dtype(f.type)
        columns[f.name] = pd.array(values, dtype=dtype) if dtype != "object" else pd.array(values, dtype=object)
    return pd.DataFrame(columns)
