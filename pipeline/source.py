"""The ``coordinator-log`` Spark data source (PySpark's Python Data Source API).

    spark.dataSource.register(CoordinatorLogDataSource)
    df = spark.read.format("coordinator-log").load("/path/to/log.dirs")

One row per stored record (see :mod:`pipeline.schema`), one Spark input partition per segment
file, decoded by ``storage``'s own record code and yielded as Arrow RecordBatches. Several
stores: ``.option("paths", json.dumps([dir1, dir2]))`` instead of a path.
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

from pipeline.schema import ARROW_SCHEMA

NAME = "coordinator-log"


class SegmentPartition(InputPartition):
    def __init__(self, segment: dict[str, Any]) -> None:
        super().__init__(segment)
        self.segment = segment


class CoordinatorLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return from_arrow_schema(ARROW_SCHEMA)

    def reader(self, schema: StructType) -> DataSourceReader:
        return CoordinatorLogReader(_stores(self.options))


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
    def __init__(self, stores: list[str]) -> None:
        self.stores = stores

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
        from pipeline.rows import record_batches
        from pipeline.segments import Segment, read_segment

        info = partition.value
        if not info:
            return
        segment = Segment(**info)
        yield from record_batches(segment.store, segment.log, segment.partition,
                                  read_segment(segment))
