"""The job's one-pass digest path gives the tables the per-record path gave (the pipeline before
the digest: :mod:`tests.pipeline.reference`), on ``conftest.py``'s odd store: several segments
per partition, removed and re-committed offsets, commit metadata off the fast path,
undecodable records, and an offset sent inside a transaction."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from pipeline import digest as digest_module
from pipeline import tables
from pipeline.digest import GROUP
from pipeline.job import JobResult, read_stores
from pipeline.segments import list_segments, pack_partitions
from pipeline.source import DIGEST, _digest
from tests.pipeline.compare import canonical, output_rows
from tests.pipeline.conftest import LATE
from tests.pipeline.reference import reference_tables

# every test here runs on the Spark session (its start and this module's jobs take most of a
# minute): make test-fast skips the module
pytestmark = pytest.mark.slow


def test_the_six_tables_equal_the_per_record_path(spark: SparkSession, odd_store: Path,
                                                  odd_job: tuple[JobResult, Path]) -> None:
    result, out = odd_job
    reference = reference_tables(spark, [str(odd_store)])
    assert result.records == reference["records"].count() > 12_000
    assert set(result.rows) == set(tables.TABLE_NAMES)
    for name in tables.TABLE_NAMES:
        columns, rows = output_rows(out, name)
        expected = reference[name]
        assert columns == expected.columns, name
        assert rows == canonical([r.asDict(recursive=True) for r in expected.collect()],
                                 columns), name
        assert result.rows[name] == len(rows) > 0, name
    # and the report's commits per minute
    columns = ["store", "group_id", "minute_ms", "count"]
    digest = read_stores(spark, [str(odd_store)], DIGEST)
    got = [r.asDict() for r in tables.commits_per_minute(digest).collect()]
    per_minute = [r.asDict() for r in reference["commits_per_minute"].collect()]
    assert canonical(got, columns) == canonical(per_minute, columns)
    assert len(got) > 10


def test_the_odd_records_reached_the_tables(odd_job: tuple[JobResult, Path]) -> None:
    commits = {(r["group_id"], r["topic"], r["topic_partition"]): r
               for r in pq.read_table(odd_job[1] / "offset_commits").to_pylist()}
    removed = commits[("cg-0", "topic-0", 0)]
    assert removed["removed"] and removed["removed_ms"] == LATE
    back = commits[("cg-0", "topic-0", 1)]
    assert not back["removed"] and back["last_offset"] == 7
    assert commits[("cg-0", "topic-0", 2)]["last_offset"] == 8
    assert commits[("cg-0", "topic-0", 4)]["last_offset"] != 1  # the undecodable one
    sent = commits[("cg-0", "topic-0", 3)]
    assert sent["last_offset"] == 10 and sent["transactional_offsets"] == 1
    assert sent["transactional"] and not back["transactional"]


def test_a_partitions_groups_give_the_same_rows_however_often_they_are_sent(
        odd_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The replayed rows leave a task every ``REPLAYED_BATCH_ROWS``: sent after every group,
    they are the rows sent once at the end of the partition."""
    segments = pack_partitions(list_segments([str(odd_store)]), None)[0]

    def rows() -> list[tuple[object, ...]]:
        batches = [b for b in _digest(segments) if b.column("kind")[0].as_py() == GROUP]
        return sorted(tuple(map(str, row.values()))
                      for b in batches for row in b.to_pylist())

    once = rows()
    monkeypatch.setattr(digest_module, "REPLAYED_BATCH_ROWS", 1)
    assert rows() == once
    assert len(once) > 100
    states = [row[2:4] for row in once if row[1] == "state"]  # (store, group_id)
    assert len(states) == len(set(states)) > 1  # each group replayed once
