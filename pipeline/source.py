"""The ``coordinator-log`` Spark data source (PySpark's Python Data Source API).

    spark.dataSource.register(CoordinatorLogDataSource)
    df = spark.read.format("coordinator-log").load("/path/to/log.dirs")

One row per stored record (see :mod:`pipeline.schema`), one Spark input partition per segment
file, yielded as Arrow RecordBatches: the records are framed with numpy
(:mod:`pipeline.frames`), offset commits decoded in bulk (:mod:`pipeline.commits`), the other
records by ``storage``'s own record code. Several stores: ``.option("paths",
json.dumps([dir1, dir2]))`` instead of a path. ``.option("view", "digest")`` reads what the
report job needs instead (:mod:`pipeline.digest`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from pipeline.digest import DIGEST_SCHEMA
from pipeline.schema import ARROW_SCHEMA

NAME = "coordinator-log"
RECORDS, DIGEST = "records", "digest"
VIEWS = {RECORDS: ARROW_SCHEMA, DIGEST: DIGEST_SCHEMA}
CHUNK_RECORDS = 65_536
"""Records framed and decoded at a time (whole batches): bounds a task's memory."""


class SegmentPartition(InputPartition):
    def __init__(self, segment: dict[str, Any]) -> None:
        super().__init__(segment)
        self.segment = segment


class CoordinatorLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return from_arrow_schema(VIEWS[_view(self.options)])

    def reader(self, schema: StructType) -> DataSourceReader:
        return CoordinatorLogReader(_stores(self.options), _view(self.options))


def _view(options: Mapping[str, str]) -> str:
    view = options.get("view", RECORDS)
    if view not in VIEWS:
        raise ValueError(f"option view: one of {', '.join(VIEWS)}, not {view!r}")
    return view


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
    def __init__(self, stores: list[str], view: str = RECORDS) -> None:
        self.stores = stores
        self.view = view

    def partitions(self) -> list[InputPartition]:
        from pipeline.segments import list_segments, store_label

        segments = list_segments(self.stores)
        parts: list[InputPartition] = []
        for seg in segments:
            entry = asdict(seg)
            entry["store"] = store_label(seg.store)
            parts.append(SegmentPartition(entry))
        return parts or [SegmentPartition({})]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pipeline.frames import segment_frames
        from pipeline.segments import Segment

        info = partition.value
        if not info:
            return
        seg = Segment(**info)
        chunks = segment_frames(seg.path, seg.partition, seg.base_offset, seg.last,
                                CHUNK_RECORDS)
        if self.view == DIGEST:
            from pipeline.digest import digest_batches

            yield from digest_batches(seg.store, seg.log, seg.partition, chunks)
            return
        from pipeline.rows import frame_batches

        for frames in chunks:
            yield from frame_batches(seg.store, seg.log, seg.partition, frames)
