"""The ``coordinator-log`` Spark data source (PySpark's Python Data Source API).

    spark.dataSource.register(CoordinatorLogDataSource)
    df = spark.read.format("coordinator-log").load("/path/to/log.dirs")

One row per stored record (see :mod:`pipeline.schema`), one Spark input partition per segment
file (or, with ``.option("tasks", N)``, the segments packed by size into N input partitions:
fewer, longer tasks cost Spark less per record; the ``digest`` view packs whole coordinator
partitions), yielded as Arrow RecordBatches: the records
are framed with numpy (:mod:`pipeline.frames`), offset commits decoded in bulk
(:mod:`pipeline.commits`), the other records by ``storage``'s own record code. Several stores:
``.option("paths", json.dumps([dir1, dir2]))`` instead of a path. ``.option("view",
"digest")`` reads what the report job needs instead (:mod:`pipeline.digest`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from pipeline.schema import ARROW_SCHEMA, DIGEST_SCHEMA

if TYPE_CHECKING:
    from pipeline.frames import Frames
    from pipeline.segments import Segment

NAME = "coordinator-log"
RECORDS, DIGEST = "records", "digest"
VIEWS = {RECORDS: ARROW_SCHEMA, DIGEST: DIGEST_SCHEMA}
CHUNK_RECORDS = 65_536
"""Records framed and decoded at a time (whole batches): bounds a task's memory."""


class SegmentPartition(InputPartition):
    """The segments one task reads (their :class:`pipeline.segments.Segment` fields)."""

    def __init__(self, segments: list[dict[str, Any]]) -> None:
        super().__init__(segments)  # read back as ``value``


class CoordinatorLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return from_arrow_schema(VIEWS[_view(self.options)])

    def reader(self, schema: StructType) -> DataSourceReader:
        return CoordinatorLogReader(_stores(self.options), _view(self.options),
                                    _tasks(self.options))


def _view(options: Mapping[str, str]) -> str:
    view = options.get("view", RECORDS)
    if view not in VIEWS:
        raise ValueError(f"option view: one of {', '.join(VIEWS)}, not {view!r}")
    return view


def _tasks(options: Mapping[str, str]) -> int | None:
    if "tasks" not in options:
        return None
    tasks = options["tasks"]
    if not tasks.isdigit() or int(tasks) < 1:
        raise ValueError(f"option tasks: a number of input partitions (1 or more), not {tasks!r}")
    return int(tasks)


def _stores(options: Mapping[str, str]) -> list[str]:
    if "paths" in options:
        paths = json.loads(options["paths"])
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError("option paths: a JSON list of log directories")
        return paths
    if "path" in options:
        return [options["path"]]
    raise ValueError("coordinator-log: give a log directory with load(path) or option paths")


class CoordinatorLogReader(DataSourceReader):
    def __init__(self, stores: list[str], view: str = RECORDS, tasks: int | None = None
                 ) -> None:
        self.stores = stores
        self.view = view
        self.tasks = tasks

    def partitions(self) -> list[InputPartition]:
        from pipeline.segments import list_segments, pack, pack_partitions, store_label

        segments = list_segments(self.stores)
        if self.view == DIGEST:  # each coordinator partition whole: its groups are replayed
            bins = pack_partitions(segments, self.tasks)
        else:
            bins = pack(segments, self.tasks) if self.tasks else [[seg] for seg in segments]
        parts: list[InputPartition] = []
        for segs in bins:
            entries = []
            for seg in segs:
                entry = asdict(seg)
                entry["store"] = store_label(seg.store)
                entries.append(entry)
            parts.append(SegmentPartition(entries))
        return parts or [SegmentPartition([])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pipeline.segments import Segment

        segments = [Segment(**info) for info in partition.value]
        if self.view == DIGEST:
            yield from _digest(segments)
            return
        from pipeline.rows import frame_batches

        for seg in segments:
            for frames in _chunks(seg):
                yield from frame_batches(seg.store, seg.log, seg.partition, frames)


def _chunks(seg: Segment) -> Iterator[Frames]:
    from pipeline.frames import segment_frames

    return segment_frames(seg.path, seg.partition, seg.base_offset, seg.last, CHUNK_RECORDS)


def _digest(segments: list[Segment]) -> Iterator[pa.RecordBatch]:
    """The digest rows of whole coordinator partitions' segments (in log order): each
    partition's groups replayed once its last segment is read."""
    from pipeline.digest import digest_batches, replayed_rows

    for _, partition in itertools.groupby(segments, lambda s: (s.store, s.log, s.partition)):
        group_records: list[pa.RecordBatch] = []
        for seg in partition:
            yield from digest_batches(seg.store, seg.log, seg.partition, _chunks(seg),
                                      group_records)
        yield from replayed_rows(group_records)
