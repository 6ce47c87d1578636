"""The segment files of one or more stores, and the records of one segment (read-only).

Reads the way ``python -m coordinator log dump`` does (:mod:`storage.dump`): a committed
compaction ``.swap`` file stands in for the segments it replaces, a torn tail of a partition's
last segment is skipped, and any other damage raises :class:`storage.errors.CorruptLogError`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from storage.dump import partitions_in
from storage.errors import CorruptLogError
from storage.log import TOPIC, SegmentInfo, iter_segment_records, partition_dir
from storage.segment import plan_directory, scan

METADATA_LOG = "__cluster_metadata"
LOGS = (TOPIC, METADATA_LOG)


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment file: the unit of work of a Spark input partition."""

    store: str  # the log directory, as given
    log: str  # __consumer_offsets or __cluster_metadata
    partition: int
    base_offset: int
    path: str
    last: bool  # the partition's newest segment (a torn tail there is skipped)
    size: int


def list_segments(stores: list[str]) -> list[Segment]:
    """Every segment of every partition of both logs of each store, largest first (so the
    biggest tasks start first)."""
    out: list[Segment] = []
    for store in stores:
        if not Path(store).is_dir():
            raise FileNotFoundError(f"no such log directory: {store}")
        for log in LOGS:
            for partition in partitions_in(store, log):
                plan = plan_directory(partition_dir(store, partition, log))
                items = list(plan.segments.items())
                for i, (base, path) in enumerate(items):
                    out.append(Segment(store, log, partition, base, str(path),
                                       i == len(items) - 1, path.stat().st_size))
    out.sort(key=lambda s: -s.size)
    return out


def pack(segments: list[Segment], bins: int) -> list[list[Segment]]:
    """``segments`` in at most ``bins`` groups of about equal bytes (largest first, each to
    the lightest group), the heaviest group first."""
    return _pack([[seg] for seg in segments], bins)


def pack_partitions(segments: list[Segment], bins: int | None) -> list[list[Segment]]:
    """``segments`` grouped so that each (store, log, partition) is whole in one group, its
    segments in log order (so a task replays each group it reads from all of its records):
    packed as :func:`pack` packs segments into at most ``bins`` groups, or one group per
    partition."""
    partitions: dict[tuple[str, str, int], list[Segment]] = {}
    for seg in segments:
        partitions.setdefault((seg.store, seg.log, seg.partition), []).append(seg)
    units = [sorted(segs, key=lambda s: s.base_offset) for segs in partitions.values()]
    return _pack(units, len(units) if bins is None else bins)


def _pack(units: list[list[Segment]], bins: int) -> list[list[Segment]]:
    """``units`` (each kept together, in its order) in at most ``bins`` groups of about equal
    bytes: the largest unit first, each to the lightest group; the heaviest group first."""
    groups: list[list[Segment]] = [[] for _ in range(min(bins, len(units)))]
    load = [0] * len(groups)
    for unit in sorted(units, key=lambda u: -sum(s.size for s in u)):
        i = load.index(min(load))
        groups[i].extend(unit)
        load[i] += sum(s.size for s in unit)
    order = sorted(range(len(groups)), key=lambda i: -load[i])
    return [groups[i] for i in order]


def read_segment(segment: Segment) -> Iterator[tuple[int, int, bytes, bytes | None]]:
    """The records (offset, timestamp, key, value-or-None) of one segment, CRC-checked."""
    buf = Path(segment.path).read_bytes()
    result = scan(buf, segment.base_offset)
    if result.error is not None:
        if not segment.last or result.more_valid_data:
            raise CorruptLogError(segment.partition, segment.path, result.valid_end,
                                  result.error)
        buf = buf[: result.valid_end]
    info = SegmentInfo(segment.base_offset, Path(segment.path), len(buf))
    yield from iter_segment_records(segment.partition, info, buf)


def store_label(path: str) -> str:
    """How a store is named in the tables: its path as given, normalised."""
    return os.path.normpath(path)
