"""Arrow schemas of the tables that :mod:`pipeline.replay` produces per group."""

from __future__ import annotations

import pyarrow as pa

_GROUP: list[tuple[str, pa.DataType]] = [
    ("store", pa.string()), ("group_id", pa.string()),
    # consumer | share | streams | classic (pipeline.replay.GROUP_TYPES)
    ("group_type", pa.string()),
]

ASSIGNMENT_RUNS = pa.schema([
    *_GROUP,
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("epoch", pa.int32()),
    ("timestamp", pa.int64()),  # when the assignor run finished (ms)
    ("record_timestamp", pa.int64()),
    ("since_previous_ms", pa.int64()),
    ("epoch_bump_ms", pa.int64()),
    ("members", pa.int32()),
    ("partitions", pa.int32()),  # streams groups: active tasks (subtopology id, partition)
    ("partitions_moved", pa.int32()),  # streams groups: active tasks moved
    ("standby_tasks", pa.int32()),  # streams groups only: tasks with a standby replica
    ("standby_tasks_moved", pa.int32()),  # streams groups only: their standby owners changed
])

MEMBER_TIMELINE = pa.schema([
    *_GROUP,
    ("member_id", pa.string()),
    ("event", pa.string()),  # joined | epoch | left (left the group or was fenced)
    ("epoch", pa.int32()),
    ("timestamp", pa.int64()),
    ("offset", pa.int64()),
])

REBALANCES = pa.schema([
    *_GROUP,
    ("epoch", pa.int32()),
    ("started_ms", pa.int64()),
    ("target_ms", pa.int64()),
    ("completed_ms", pa.int64()),
    ("duration_ms", pa.int64()),
    ("members", pa.int32()),
    ("status", pa.string()),  # completed | superseded | empty | incomplete
])

GROUP_STATE = pa.schema([
    *_GROUP,
    ("state", pa.string()),  # live | empty | dead, at the end of the log
    ("state_timestamp", pa.int64()),
    ("epoch", pa.int32()),
    ("members", pa.int32()),
    ("subscribed_topics", pa.list_(pa.string())),
    ("protocol_type", pa.string()),
])

GROUP_TABLES: dict[str, pa.Schema] = {
    "runs": ASSIGNMENT_RUNS,
    "timeline": MEMBER_TIMELINE,
    "rebalances": REBALANCES,
    "state": GROUP_STATE,
}


def _union() -> pa.Schema:
    fields: dict[str, pa.Field] = {"table": pa.field("table", pa.string())}
    for schema in GROUP_TABLES.values():
        for f in schema:
            if fields.setdefault(f.name, f).type != f.type:  # pragma: no cover - a typo
                raise TypeError(f"group tables disagree on the type of {f.name}")
    return pa.schema(list(fields.values()))


GROUP_TABLES_UNION = _union()
"""Every group table's rows in one schema (one shared replay): ``table`` names the table
(a key of :data:`GROUP_TABLES`), the other tables' columns are null."""


def union_table(tables: dict[str, list[dict[str, object]]]) -> pa.Table:
    """The rows of several group tables (by :data:`GROUP_TABLES` key) in the union schema."""
    parts = []
    for kind, rows in tables.items():
        if not rows:
            continue
        table = pa.Table.from_pylist(rows, schema=GROUP_TABLES[kind])
        n = table.num_rows
        parts.append(pa.table(
            [pa.repeat(pa.scalar(kind, pa.string()), n) if f.name == "table"
             else table.column(f.name) if f.name in table.column_names
             else pa.nulls(n, f.type) for f in GROUP_TABLES_UNION],
            schema=GROUP_TABLES_UNION))
    if not parts:
        return GROUP_TABLES_UNION.empty_table()
    return pa.concat_tables(parts)
