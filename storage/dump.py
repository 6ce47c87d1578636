"""Every record of a store as JSON-ready dicts (``python -m coordinator log dump``).

Read-only: nothing on disk is changed, not even a torn tail (it is skipped) or an unfinished
compaction (its committed ``.swap`` file is read in place of the segments it replaces).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storage.errors import CorruptLogError, RecordDecodeError
from storage.log import TOPIC, SegmentInfo, iter_segment_records, partition_dir
from storage.records import decode_record, record_to_json
from storage.segment import plan_directory, scan


def partitions_in(log_dir: str | os.PathLike[str], topic: str = TOPIC) -> list[int]:
    """The partitions of ``topic`` that have a directory under ``log_dir``, sorted."""
    pattern = re.compile(rf"^{re.escape(topic)}-(\d+)$")
    found = []
    for entry in Path(log_dir).iterdir():
        m = pattern.match(entry.name)
        if m and entry.is_dir():
            found.append(int(m.group(1)))
    return sorted(found)


def read_partition(
    log_dir: str | os.PathLike[str], partition: int, topic: str = TOPIC
) -> Iterator[tuple[int, int, bytes, bytes | None]]:
    """The raw records (offset, timestamp, key, value) of one partition, read-only."""
    directory = partition_dir(log_dir, partition, topic)
    if not directory.is_dir():
        return
    plan = plan_directory(directory)
    items = list(plan.segments.items())
    for i, (base, path) in enumerate(items):
        buf = path.read_bytes()
        result = scan(buf, base)
        if result.error is not None:
            if i != len(items) - 1 or result.more_valid_data:
                raise CorruptLogError(partition, str(path), result.valid_end, result.error)
            buf = buf[: result.valid_end]  # a torn tail: skipped, as recovery would drop it
        yield from iter_segment_records(partition, SegmentInfo(base, path, len(buf)), buf)


def dump(
    log_dir: str | os.PathLike[str], partition: int | None = None, topic: str = TOPIC
) -> Iterator[dict[str, Any]]:
    """Yield ``{"partition", "offset", "timestamp", "type", "key", "value"}`` per record.

    ``type`` is Kafka's record name (e.g. ``ConsumerGroupTargetAssignmentMetadata``); ``key``
    and ``value`` use Kafka's field names; ``value`` is None for a tombstone. A record that
    does not decode is reported with ``type`` ``"Undecodable"`` and an ``error`` field.
    """
    parts = partitions_in(log_dir, topic) if partition is None else [partition]
    for p in parts:
        for offset, timestamp, key_bytes, value_bytes in read_partition(log_dir, p, topic):
            row: dict[str, Any] = {"partition": p, "offset": offset, "timestamp": timestamp}
            try:
                key, value = decode_record(key_bytes, value_bytes)
            except RecordDecodeError as exc:
                row.update(
                    type="Undecodable",
                    key=key_bytes.hex(),
                    value=None if value_bytes is None else value_bytes.hex(),
                    error=str(exc),
                )
            else:
                row.update(record_to_json(key, value))
            yield row
