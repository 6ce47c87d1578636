"""The ``coordinator-log`` data source against ``storage``'s own dump of the same store."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.job import read_stores
from pipeline.segments import list_segments, pack, pack_partitions
from pipeline.source import DIGEST
from pipeline.synthetic import write_store
from storage.dump import dump

# every test here runs on the Spark session (its start and this module's jobs take most of a
# minute): make test-fast skips the module
pytestmark = pytest.mark.slow


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


def test_the_tasks_option_packs_segments_by_size(spark: SparkSession, store: Path) -> None:
    segments = list_segments([str(store)])
    bins = pack(segments, 3)
    assert len(bins) == 3
    assert sorted(s.path for b in bins for s in b) == sorted(s.path for s in segments)
    loads = [sum(s.size for s in b) for b in bins]
    assert loads == sorted(loads, reverse=True)
    # greedy by size: no bin exceeds the lightest by more than the largest segment
    assert loads[0] - loads[-1] <= max(s.size for s in segments)
    assert pack(segments[:2], 5) == [[segments[0]], [segments[1]]]
    df = read_stores(spark, [str(store)], tasks=3)
    assert df.rdd.getNumPartitions() == 3
    columns = ["log", "partition", "offset", "type", "group_id", "commit_offset"]
    packed = sorted(tuple(r) for r in df.select(*columns).collect())
    one_each = sorted(tuple(r) for r in read_stores(spark, [str(store)]).select(
        *columns).collect())
    assert packed == one_each


def test_the_digest_view_gives_each_task_whole_partitions_in_log_order(
        spark: SparkSession, store: Path) -> None:
    """A task replays the groups of the partitions it reads, so it reads each whole."""
    segments = list_segments([str(store)])
    units = {(s.store, s.log, s.partition) for s in segments}
    assert len(units) >= 2 and len(segments) > len(units)
    for tasks in (None, 1, len(units) + 3):
        bins = pack_partitions(segments, tasks)
        assert len(bins) == (len(units) if tasks is None else min(tasks, len(units)))
        assert sorted(s.path for b in bins for s in b) == sorted(s.path for s in segments)
        for b in bins:
            for unit in {(s.store, s.log, s.partition) for s in b}:
                mine = [s.base_offset for s in b if (s.store, s.log, s.partition) == unit]
                assert mine == sorted(s.base_offset for s in segments
                                      if (s.store, s.log, s.partition) == unit)
    assert read_stores(spark, [str(store)], DIGEST, tasks=1).rdd.getNumPartitions() == 1
    assert read_stores(spark, [str(store)], DIGEST).rdd.getNumPartitions() == len(units)


@pytest.mark.parametrize("tasks", ["0", "-1", "two"])
def test_a_bad_tasks_option_is_refused(spark: SparkSession, store: Path, tasks: str) -> None:
    with pytest.raises(Exception, match="option tasks"):
        spark.read.format("coordinator-log").option("tasks", tasks).load(str(store)).count()


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
