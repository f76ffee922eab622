"""SQL over a profile from Python: ``jaxprof.sql(path)`` opens the same database `jaxprof sql`
queries (docs/sql.md): every analysis table with the --json columns, and every event with its
stats, built in memory (events when a query first names them), or a file `jaxprof export --format
sqlite` wrote."""
from __future__ import annotations

import json
import os
from typing import Any

from . import _core

__all__ = ["Database", "sql"]


class Database:
    """A profile's SQL database. ``query`` returns rows as dicts; ``to_pandas`` a DataFrame."""

    def __init__(self, path: str | os.PathLike[str], host: str | None = None, device: str | None = None) -> None:
        self.path = os.fspath(path)
        self._core = _core.Sql(self.path, host=host, device=device)

    def query(self, sql: str) -> list[dict[str, Any]]:
        """The rows of the query's last statement that returns rows (each a dict by column)."""
        text, results, at = self._core.run(sql, "json"), [], 0
        decoder = json.JSONDecoder()
        while at < len(text):  # one JSON array per statement that returns rows
            if text[at].isspace():
                at += 1
                continue
            rows, at = decoder.raw_decode(text, at)
            results.append(rows)
        return results[-1] if results else []

    def text(self, sql: str) -> str:
        """The aligned table `jaxprof sql` prints."""
        return self._core.run(sql, "text")

    def to_pandas(self, sql: str) -> Any:
        """The query's rows as a pandas DataFrame (pandas imported only here)."""
        import pandas as pd

        return pd.DataFrame(self.query(sql))

    def __repr__(self) -> str:
        return f"Database({self.path!r})"


def sql(path: str | os.PathLike[str], host: str | None = None, device: str | None = None) -> Database:
    """Opens the SQL database of a profile (a file, run directory or log directory) or of an
    exported ``.db`` file. Raises ValueError naming the byte offset of a corrupt input."""
    return Database(path, host=host, device=device)
