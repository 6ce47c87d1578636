"""Table rows in a canonical order, to compare the outputs of two runs of the pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipeline.tables import TABLE_NAMES


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def canonical(rows: list[dict[str, Any]], columns: list[str]) -> list[tuple[Any, ...]]:
    """The rows as tuples of ``columns`` (lists and structs as tuples), sorted."""
    return sorted((tuple(_freeze(r[c]) for c in columns) for r in rows), key=repr)


def output_rows(out: Path, name: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """A table the job wrote under ``out``: its columns and canonical rows."""
    table = pq.read_table(out / name)
    return table.column_names, canonical(table.to_pylist(), table.column_names)


def assert_same_outputs(a: Path, b: Path) -> None:
    """The six tables under ``a`` and ``b`` hold the same rows."""
    for name in TABLE_NAMES:
        columns, rows = output_rows(a, name)
        assert (columns, rows) == output_rows(b, name), name
