"""The ``coordinator-log`` data source against ``storage``'s own dump of the same store."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.job import read_stores
from pipeline.segments import list_segments
from pipeline.synthetic import write_store
from storage.dump import dump


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("synthetic") / "store"
    write_store(path, 6000, partitions=2, consumer_groups=3, classic_groups=2,
                segment_bytes=64 * 1024)
    return path


def test_one_input_partition_per_segment(spark: SparkSession, store: Path) -> None:
    segments = list_segments([str(store)])
    assert len(segments) > 3  # small segments: several per partition
    df = spark.read.format("coordinator-log").load(str(store))
    assert df.rdd.getNumPartitions() == len(segments)


def test_rows_match_the_dump(spark: SparkSession, store: Path) -> None:
    expected = list(dump(store)) + list(dump(store, 0, "__cluster_metadata"))
    rows = read_stores(spark, [str(store)]).select(
        "log", "partition", "offset", "timestamp", "type", "tombstone", "group_id",
        "epoch", "commit_offset").collect()
    assert len(rows) == len(expected)
    assert Counter(r["type"] for r in rows) == Counter(e["type"] for e in expected)
    by_key = {(r["log"] == "__cluster_metadata", r["partition"], r["offset"]): r for r in rows}
    for i, e in enumerate(expected):
        meta = e["type"] == "TopicMetadata"
        r = by_key[(meta, e["partition"], e["offset"])]
        assert r["timestamp"] == e["timestamp"]
        assert r["type"] == e["type"]
        assert r["tombstone"] == (e["value"] is None)
        if e["type"] == "OffsetCommit" and e["value"] is not None:
            assert (r["group_id"], r["commit_offset"]) == (e["key"]["group"],
                                                           e["value"]["offset"]), i
        if e["type"] == "ConsumerGroupMetadata" and e["value"] is not None:
            assert r["epoch"] == e["value"]["Epoch"]


def test_torn_tail_is_skipped_like_the_dump(spark: SparkSession, tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, 500, partitions=1, consumer_groups=1, classic_groups=0)
    segment = store / "__consumer_offsets-0" / "00000000000000000000.log"
    with segment.open("ab") as f:
        f.write(b"\x00\x00\x01\x00garbage")  # a torn last batch
    df = spark.read.format("coordinator-log").load(str(store))
    assert df.where("log = '__consumer_offsets'").count() == sum(1 for _ in dump(store))
