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
