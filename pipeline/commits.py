"""OffsetCommit records decoded in bulk: each distinct key once, the values with numpy.

A store is mostly offset commits, and a group commits the same few keys (group, topic,
partition) over and over: the keys are dictionary-encoded on their bytes and only the distinct
ones decoded, by ``storage``'s own codec. The value fields the tables read sit at fixed places
once the metadata string's length is known (``OffsetCommitValue`` v0: offset, leader epoch,
metadata, commit timestamp, expire timestamp, topic id); they are read for every record at once.
A record that does not fit that fast path (a metadata string of 128 bytes or more, or not
ASCII, another value version, a length that does not add up) is decoded on its own by
``storage.records.decode_record``, which also gives an undecodable record its error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from pipeline.frames import Bytes, Frames, Ints, distinct_keys, gather_bytes, read_u16, read_u64
from storage.errors import RecordDecodeError
from storage.records import OffsetCommitKey, decode_key, decode_record

COMMIT_TYPE_IDS = (0, 1)  # key version 1, and the legacy version 0 Kafka still reads
# OffsetCommitValue v0 from the value's start: version(2) offset(8) leader_epoch(4)
# metadata(uvarint length + bytes) commit_timestamp(8) expire_timestamp(8) topic_id(1 [+16])
_METADATA_LENGTH = 14
_FIXED = 2 + 8 + 4 + 1 + 8 + 8 + 1  # the value's bytes besides the metadata and the uuid


@dataclass(frozen=True, slots=True)
class Commits:
    """The decodable OffsetCommit records of some frames, in log order."""

    index: Ints  # the records' positions in the frames
    key: Ints  # index into ``keys``
    keys: list[tuple[str, str, int]]  # (group, topic, partition)
    live: npt.NDArray[np.bool_]  # not a tombstone
    commit_offset: Ints  # the value's fields (0 for a tombstone)
    commit_timestamp: Ints
    expire_timestamp: Ints
    errors: list[tuple[int, str]]  # (position in the frames, why it does not decode)

    def __len__(self) -> int:
        return len(self.index)


def commit_positions(frames: Frames) -> Ints:
    return np.flatnonzero(np.isin(frames.type_id, COMMIT_TYPE_IDS))


def decode_commits(frames: Frames, index: Ints) -> Commits:
    """Decode the OffsetCommit records at ``index`` (positions in ``frames``)."""
    n = len(index)
    codes, distinct = distinct_keys(frames, index)
    keys: list[tuple[str, str, int]] = []
    key_ok = np.ones(len(distinct), dtype=bool)
    for i, raw in enumerate(distinct):
        try:
            key = decode_key(raw)
        except RecordDecodeError:
            key_ok[i] = False
            keys.append(("", "", 0))
            continue
        assert isinstance(key, OffsetCommitKey)
        keys.append((key.group, key.topic, key.partition))
    live = frames.value_length[index] >= 0
    commit_offset = np.zeros(n, dtype=np.int64)
    commit_timestamp = np.zeros(n, dtype=np.int64)
    expire_timestamp = np.zeros(n, dtype=np.int64)
    fast = live & key_ok[codes]
    fast[fast] = _fast_values(frames.data, frames.value_start[index[fast]],
                              frames.value_length[index[fast]], commit_offset, commit_timestamp,
                              expire_timestamp, np.flatnonzero(fast))
    slow = np.flatnonzero((live | ~key_ok[codes]) & ~fast)
    ok = np.ones(n, dtype=bool)
    errors: list[tuple[int, str]] = []
    for i in slow.tolist():
        at = int(index[i])
        try:
            _, value = decode_record(frames.key(at), frames.value(at))
        except RecordDecodeError as exc:
            ok[i] = False
            errors.append((at, str(exc)))
            continue
        if value is not None:
            commit_offset[i] = value.offset
            commit_timestamp[i] = value.commit_timestamp
            expire_timestamp[i] = value.expire_timestamp
    return Commits(index[ok], codes[ok], keys, live[ok], commit_offset[ok],
                   commit_timestamp[ok], expire_timestamp[ok], errors)


def _fast_values(data: Bytes, start: Ints, length: Ints, commit_offset: Ints,
                 commit_timestamp: Ints, expire_timestamp: Ints, rows: Ints
                 ) -> npt.NDArray[np.bool_]:
    """Read the values that fit the fast path into the arrays at ``rows``; which did."""
    ok = length >= _FIXED
    ok[ok] = read_u16(data, start[ok]) == 0  # value version 0
    meta = np.zeros(len(start), dtype=np.int64)
    meta[ok] = data[start[ok] + _METADATA_LENGTH]
    ok &= meta < 0x80  # a one-byte length
    flag_at = start + _FIXED - 1 + meta
    flag = np.full(len(start), 2, dtype=np.int64)
    fits = ok & (length >= _FIXED + meta)
    flag[fits] = data[flag_at[fits]]
    ok &= ((flag == 0) & (length == _FIXED + meta)) | ((flag == 1)
                                                      & (length == _FIXED + meta + 16))
    with_meta = np.flatnonzero(ok & (meta > 0))
    if len(with_meta):  # a metadata string: ASCII is valid UTF-8, anything else goes slow
        bounds, text = gather_bytes(data, start[with_meta] + _METADATA_LENGTH + 1,
                                    meta[with_meta])
        high = np.concatenate(([0], np.cumsum(text >= 0x80)))
        ok[with_meta[high[bounds[1:]] - high[bounds[:-1]] > 0]] = False
    good = np.flatnonzero(ok)
    at = start[good]
    commit_offset[rows[good]] = read_u64(data, at + 2)
    commit_timestamp[rows[good]] = read_u64(data, at + _METADATA_LENGTH + 1 + meta[good])
    expire_timestamp[rows[good]] = read_u64(data, at + _METADATA_LENGTH + 9 + meta[good])
    return ok


def key_columns(commits: Commits) -> tuple[pa.Array, pa.Array, pa.Array]:
    """group, topic and partition of every commit, as Arrow arrays."""
    groups = pa.array([k[0] for k in commits.keys], pa.string())
    topics = pa.array([k[1] for k in commits.keys], pa.string())
    partitions = pa.array([k[2] for k in commits.keys], pa.int32())
    take = pa.array(commits.key, pa.int64())
    return groups.take(take), topics.take(take), partitions.take(take)
