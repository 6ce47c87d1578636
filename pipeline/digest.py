"""The ``digest`` view of the ``coordinator-log`` source: what the report job reads, in one pass.

Spark gives a Python data source no column pruning and no aggregate pushdown, and moving every
record into the JVM costs more than reading it; so for the job the source reads each segment
once and yields (``kind`` column):

- ``group``: the rows of the four group tables (:data:`pipeline.outputs.GROUP_TABLES_UNION`,
  ``table`` naming the table), replayed map-side: a task reads each coordinator partition whole,
  in log order (:func:`pipeline.segments.pack_partitions`), and a group's records all live in
  the partition its id maps to, as the coordinator loads them; so each task replays its
  partitions' groups (:mod:`pipeline.replay`) from the records of the types the replay reads
  (:data:`GROUP_RECORD_TYPES`, decoded, with :data:`GROUP_COLUMNS`), and no group record
  leaves the task;
- ``offsets``: one row per offset key (group, topic, partition) per chunk of a segment: its live
  commits (``commits``), first and last commit timestamps, the log offset of its last live
  commit (``live_offset``) and that commit's ``commit_offset``, and the last record's
  ``offset``, ``timestamp`` and ``tombstone``: the map side of ``offset_commits``, merged by
  Spark exactly as the per-record aggregation would be;
- ``minute``: live commits per group per minute of commit time (``minute_ms``, ``commits``);
- ``txn``: per offset key, the offsets sent inside transactions (live TxnOffsetCommit
  records: ``commits``), which ``offset_commits`` reports as ``transactional_offsets``;
- ``segment``: one row per segment: ``records`` read and the newest batch ``timestamp``.

Offset commits are decoded in bulk (:mod:`pipeline.commits`); the records no table reads
(share-partition state, topic metadata, ...) are counted, not decoded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.commits import Commits, commit_positions, decode_commits
from pipeline.frames import Frames, Ints, distinct_keys, read_i32, read_u16
from pipeline.outputs import GROUP_TABLES, union_table
from pipeline.replay import Row, replay_group
from pipeline.rows import record_batches
from pipeline.schema import ARROW_SCHEMA, DIGEST_SCHEMA
from storage.errors import RecordDecodeError
from storage.records import RECORD_TYPES, decode_key

GROUP_RECORD_TYPES = (
    "GroupMetadata",
    "ConsumerGroupMetadata",
    "ConsumerGroupMemberMetadata",
    "ConsumerGroupTargetAssignmentMetadata",
    "ConsumerGroupTargetAssignmentMember",
    "ConsumerGroupCurrentMemberAssignment",
    "ShareGroupMetadata",
    "ShareGroupMemberMetadata",
    "ShareGroupTargetAssignmentMetadata",
    "ShareGroupTargetAssignmentMember",
    "ShareGroupCurrentMemberAssignment",
    "StreamsGroupMetadata",
    "StreamsGroupMemberMetadata",
    "StreamsGroupTargetAssignmentMetadata",
    "StreamsGroupTargetAssignmentMember",
    "StreamsGroupCurrentMemberAssignment",
    "StreamsGroupTopology",
)
GROUP_COLUMNS = ("store", "group_id", "partition", "offset", "timestamp", "type", "tombstone",
                 "member_id", "epoch", "member_state", "assignment_timestamp", "partitions",
                 "subscribed_topics", "protocol_type", "classic_members", "active_tasks",
                 "standby_tasks")
GROUP_TYPE_IDS = np.array(sorted(tid for tid, rt in RECORD_TYPES.items()
                                 if rt.name in GROUP_RECORD_TYPES), dtype=np.int64)
CURRENT_ASSIGNMENT_IDS = np.array(sorted(tid for tid, rt in RECORD_TYPES.items()
                                         if rt.name.endswith("GroupCurrentMemberAssignment")),
                                  dtype=np.int64)
_CURRENT_LEAD = 2 + 4 + 4 + 1  # version, member epoch, previous member epoch, state
_NAMES = {tid: rt.name for tid, rt in RECORD_TYPES.items()}
MINUTE_MS = 60_000

GROUP, OFFSETS, MINUTE, SEGMENT, TXN = "group", "offsets", "minute", "segment", "txn"
TXN_OFFSET_COMMIT_ID = next(tid for tid, rt in RECORD_TYPES.items()
                            if rt.name == "TxnOffsetCommit")
GROUP_RECORDS = pa.schema([ARROW_SCHEMA.field(name) for name in GROUP_COLUMNS])
"""The group records a task keeps for its replay."""
_GROUP_AT = [ARROW_SCHEMA.get_field_index(name) for name in GROUP_COLUMNS]


def _batch(kind: str, n: int, columns: dict[str, pa.Array]) -> pa.RecordBatch:
    columns["kind"] = _constant(kind, pa.string(), n)
    return _arrays(DIGEST_SCHEMA, n, columns)


def _arrays(schema: pa.Schema, n: int, columns: dict[str, pa.Array]) -> pa.RecordBatch:
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _constant(value: object, kind: pa.DataType, n: int) -> pa.Array:
    scalar: Any = pa.scalar(value, kind)
    return pa.repeat(scalar, n)


def group_rows(store: str, log: str, partition: int, frames: Frames
               ) -> Iterator[pa.RecordBatch]:
    """The group records of ``frames`` (undecodable ones left out; :data:`GROUP_RECORDS`):
    members' current assignments in bulk (:func:`current_assignments`), the others decoded one
    by one."""
    at = np.flatnonzero(np.isin(frames.type_id, GROUP_TYPE_IDS))
    if not len(at):
        return
    current = at[np.isin(frames.type_id[at], CURRENT_ASSIGNMENT_IDS)]
    done = current_assignments(store, partition, frames, current)
    if done is not None and done[0].num_rows:
        yield done[0]
    rest = at if done is None else np.setdiff1d(at, current[done[1]])
    stored = frames.stored
    for batch in record_batches(store, log, partition, (stored(i) for i in rest.tolist())):
        batch = batch.filter(pc.not_equal(batch.column("type"), pa.scalar("Undecodable")))
        if batch.num_rows:
            yield _arrays(GROUP_RECORDS, batch.num_rows, {
                name: batch.column(i) for name, i in zip(GROUP_COLUMNS, _GROUP_AT,
                                                         strict=True)})


def replayed_rows(records: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The group tables' rows (``group`` digest rows) of the groups whose records
    (:data:`GROUP_RECORDS`) are ``records``: all of one coordinator partition's. Only one
    group's records at a time are Python rows, and the tables' rows go out every
    :data:`REPLAYED_BATCH_ROWS`, so a task's memory is bounded by its partition's records in
    Arrow, not by them as Python objects."""
    if not records:
        return
    # one store and partition: a group's records are those with its id, in log order
    table = pa.Table.from_batches(records, GROUP_RECORDS).sort_by(
        [("group_id", "ascending"), ("offset", "ascending")])
    ids = table.column("group_id").combine_chunks().dictionary_encode(null_encoding="encode")
    codes = ids.indices.to_numpy()
    bounds = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), table.num_rows]
    out: dict[str, list[Row]] = {kind: [] for kind in GROUP_TABLES}
    pending = 0
    for start, end in itertools.pairwise(bounds):
        rows = table.slice(start, end - start).to_pylist()
        tables = replay_group(rows[0]["store"], rows[0]["group_id"], rows)
        for kind, kind_rows in out.items():
            made = getattr(tables, kind)
            kind_rows.extend(made)
            pending += len(made)
        if pending >= REPLAYED_BATCH_ROWS:
            yield from _group_batches(out)
            pending = 0
    yield from _group_batches(out)


REPLAYED_BATCH_ROWS = 65_536


def _group_batches(out: dict[str, list[Row]]) -> Iterator[pa.RecordBatch]:
    """``out``'s rows as ``group`` digest rows; empties ``out``'s lists."""
    for batch in union_table(out).to_batches():
        yield _batch(GROUP, batch.num_rows, dict(zip(batch.schema.names, batch.columns,
                                                     strict=True)))
    for rows in out.values():
        rows.clear()


def current_assignments(store: str, partition: int, frames: Frames, index: Ints
                        ) -> tuple[pa.RecordBatch, npt.NDArray[np.bool_]] | None:
    """Members' current assignments (the records a group writes most): the replay reads their
    key, member epoch and state, which lead the value (version, member epoch int32, previous
    member epoch int32, state int8), so only those are read, for all at once. The rows, and
    which records of ``index`` they are (the others, e.g. of an unknown value version, are
    decoded one by one)."""
    if not len(index):
        return None
    codes, distinct = distinct_keys(frames, index)
    keys: list[tuple[str, str]] = []
    key_ok = np.ones(len(distinct), dtype=bool)
    for i, raw in enumerate(distinct):
        try:
            key = decode_key(raw)
        except RecordDecodeError:
            key_ok[i] = False
            keys.append(("", ""))
            continue
        keys.append((key.group_id, key.member_id))
    start = frames.value_start[index]
    length = frames.value_length[index]
    tombstone = length < 0
    fits = length >= _CURRENT_LEAD
    fits[fits] = read_u16(frames.data, start[fits]) == 0
    ok = key_ok[codes] & (tombstone | fits)
    rows = index[ok]
    live = fits[ok]
    epoch = np.zeros(len(rows), dtype=np.int64)
    state = np.zeros(len(rows), dtype=np.int64)
    epoch[live] = read_i32(frames.data, start[ok][live] + 2)
    state[live] = frames.data[start[ok][live] + 10].astype(np.int8)
    take = pa.array(codes[ok], pa.int64())
    n = len(rows)
    names = pa.array([_NAMES[int(t)] for t in frames.type_id[rows]], pa.string())
    return _arrays(GROUP_RECORDS, n, {
        "store": _constant(store, pa.string(), n),
        "partition": _constant(partition, pa.int32(), n),
        "offset": pa.array(frames.offset[rows], pa.int64()),
        "timestamp": pa.array(frames.timestamp[rows], pa.int64()),
        "type": names,
        "tombstone": pa.array(~live, pa.bool_()),
        "group_id": pa.array([k[0] for k in keys], pa.string()).take(take),
        "member_id": pa.array([k[1] for k in keys], pa.string()).take(take),
        "epoch": pa.array(epoch, pa.int32(), mask=~live),
        "member_state": pa.array(state, pa.int32(), mask=~live),
    }), ok


def offset_rows(store: str, partition: int, frames: Frames, commits: Commits
                ) -> Iterator[pa.RecordBatch]:
    """Per offset key: the partial aggregates of its commits (see the module docstring)."""
    if not len(commits):
        return
    offset = frames.offset[commits.index]
    dead = ~commits.live
    table = pa.table({
        "key": pa.array(commits.key, pa.int64()),
        "offset": pa.array(offset, pa.int64()),
        "timestamp": pa.array(frames.timestamp[commits.index], pa.int64()),
        "tombstone": pa.array(dead, pa.bool_()),
        "live": pa.array(commits.live.astype(np.int64), pa.int64()),
        "commit_ts": pa.array(commits.commit_timestamp, pa.int64(), mask=dead),
        "live_offset": pa.array(offset, pa.int64(), mask=dead),
        "commit_offset": pa.array(commits.commit_offset, pa.int64(), mask=dead),
    })
    # "last" is in row order (log order) without threads; it skips nulls (tombstones)
    agg = table.group_by("key", use_threads=False).aggregate([
        ("offset", "max"), ("timestamp", "last"), ("tombstone", "last"), ("live", "sum"),
        ("commit_ts", "min"), ("commit_ts", "max"), ("live_offset", "max"),
        ("commit_offset", "last")])
    keys = [int(k) for k in agg.column("key").to_numpy()]
    n = len(keys)
    yield _batch(OFFSETS, n, {
        "store": _constant(store, pa.string(), n),
        "partition": _constant(partition, pa.int32(), n),
        "group_id": pa.array([commits.keys[k][0] for k in keys], pa.string()),
        "commit_topic": pa.array([commits.keys[k][1] for k in keys], pa.string()),
        "commit_partition": pa.array([commits.keys[k][2] for k in keys], pa.int32()),
        "offset": agg.column("offset_max").combine_chunks(),
        "timestamp": agg.column("timestamp_last").combine_chunks(),
        "tombstone": agg.column("tombstone_last").combine_chunks(),
        "commits": agg.column("live_sum").combine_chunks(),
        "first_commit_ms": agg.column("commit_ts_min").combine_chunks(),
        "last_commit_ms": agg.column("commit_ts_max").combine_chunks(),
        "live_offset": agg.column("live_offset_max").combine_chunks(),
        "commit_offset": agg.column("commit_offset_last").combine_chunks(),
    })


def txn_rows(store: str, partition: int, frames: Frames) -> Iterator[pa.RecordBatch]:
    """Per offset key, how many offsets were sent inside transactions (TxnOffsetCommit
    records with a value; they are few, and decoded one by one)."""
    at = np.flatnonzero(frames.type_id == TXN_OFFSET_COMMIT_ID)
    counts: dict[tuple[str, str, int], int] = {}
    stored = frames.stored
    for i in at.tolist():
        _offset, _ts, key_bytes, value_bytes = stored(i)
        if value_bytes is None:
            continue
        try:
            key = decode_key(key_bytes)
        except RecordDecodeError:
            continue
        tp = (key.group, key.topic, key.partition)
        counts[tp] = counts.get(tp, 0) + 1
    n = len(counts)
    if not n:
        return
    yield _batch(TXN, n, {
        "store": _constant(store, pa.string(), n),
        "partition": _constant(partition, pa.int32(), n),
        "group_id": pa.array([k[0] for k in counts], pa.string()),
        "commit_topic": pa.array([k[1] for k in counts], pa.string()),
        "commit_partition": pa.array([k[2] for k in counts], pa.int32()),
        "commits": pa.array(list(counts.values()), pa.int64()),
    })


def minute_rows(store: str, commits: Commits) -> Iterator[pa.RecordBatch]:
    """Live commits per group per minute of their commit timestamp."""
    names = sorted({k[0] for k in commits.keys})
    if not len(commits) or not names:
        return
    code = {name: i for i, name in enumerate(names)}
    group_of_key = np.array([code[k[0]] for k in commits.keys], dtype=np.int64)
    live = commits.live
    minute = (commits.commit_timestamp[live] // MINUTE_MS) * MINUTE_MS
    table = pa.table({"group": pa.array(group_of_key[commits.key[live]], pa.int64()),
                      "minute_ms": pa.array(minute, pa.int64())})
    agg = table.group_by(["group", "minute_ms"]).aggregate([([], "count_all")])
    n = agg.num_rows
    if not n:
        return
    yield _batch(MINUTE, n, {
        "store": _constant(store, pa.string(), n),
        "group_id": pa.array(names, pa.string()).take(agg.column("group").combine_chunks()),
        "minute_ms": agg.column("minute_ms").combine_chunks(),
        "commits": agg.column("count_all").combine_chunks(),
    })


def digest_batches(store: str, log: str, partition: int, chunks: Iterator[Frames],
                   group_records: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The digest rows of one segment, read as ``chunks`` of its records, but for the group
    tables' rows: its group records are added to ``group_records`` for
    :func:`replayed_rows`."""
    records = 0
    newest: int | None = None
    for frames in chunks:
        records += len(frames)
        if len(frames):
            last = int(frames.timestamp.max())
            newest = last if newest is None else max(newest, last)
        group_records.extend(group_rows(store, log, partition, frames))
        commits = decode_commits(frames, commit_positions(frames))
        yield from offset_rows(store, partition, frames, commits)
        yield from minute_rows(store, commits)
        yield from txn_rows(store, partition, frames)
    yield _batch(SEGMENT, 1, {"store": _constant(store, pa.string(), 1),
                              "partition": _constant(partition, pa.int32(), 1),
                              "records": pa.array([records], pa.int64()),
                              "timestamp": pa.array([newest], pa.int64())})
