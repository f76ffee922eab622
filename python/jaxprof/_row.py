"""The base of the typed result rows (``results.py``, generated from the library's column
descriptors): a frozen dataclass built from one row of the library's JSON. A row also reads as a
read-only mapping, ``row["self_ms"]``, as the plain dicts the analysis methods returned before."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, TypeVar

R = TypeVar("R", bound="Row")

_PLAIN, _FLOAT, _FRAMES = 0, 1, 2
_PLANS: dict[type, list[tuple[str, int]]] = {}


def _plan(cls: type) -> list[tuple[str, int]]:
    """The class's fields and how a JSON value becomes each: read once per class (a table of 100k
    rows builds 100k rows)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = [(f.name, _FRAMES if "Frame" in str(f.type) else _FLOAT if str(f.type).startswith("float") else _PLAIN)
                for f in fields(cls)]
        _PLANS[cls] = plan
    return plan


class Row:
    """A row of a result table: its fields are the table's JSON keys (docs/json-schema.md)."""

    __slots__ = ()

    @classmethod
    def from_json(cls: type[R], row: dict[str, Any]) -> R:
        """The row a JSON object describes. Keys it lacks (``columns=`` picked others) are None;
        numbers of float fields are floats; stacks are tuples of :class:`Frame`."""
        values = {}
        for name, kind in _plan(cls):
            v = row.get(name)
            if v is not None and kind == _FLOAT:
                v = float(v)
            elif v is not None and kind == _FRAMES:
                v = tuple(Frame.from_json(x) for x in v)
            values[name] = v
        return cls(**values)

    def keys(self) -> list[str]:
        return [f.name for f in fields(self)]  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self.keys() else default

    def to_dict(self) -> dict[str, Any]:
        """The row as plain data (frames as dicts), as its JSON has it."""
        return asdict(self)  # type: ignore[call-overload,no-any-return]


@dataclass(frozen=True)
class Frame(Row):
    """One Python frame of a recorded stack (an op's or a buffer's), innermost first."""

    file: str
    function: str
    line: int
    library: bool  # JAX's or Python's own code rather than the user's
