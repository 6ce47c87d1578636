"""The report's tables the way the pipeline computed them before the digest: Spark SQL over
the ``records`` view (every record decoded, one row each) and one replay of each group per
group table. The job's digest path must give the same tables."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from pipeline import tables
from pipeline.digest import GROUP_COLUMNS, GROUP_RECORD_TYPES
from pipeline.job import read_stores
from pipeline.outputs import GROUP_TABLES
from pipeline.replay import replay_group


def _replayer(kind: str) -> Callable[[pa.Table], pa.Table]:
    schema = GROUP_TABLES[kind]

    def run(table: pa.Table) -> pa.Table:
        table = table.sort_by([("partition", "ascending"), ("offset", "ascending")])
        rows = table.to_pylist()
        if not rows:
            return schema.empty_table()
        out = replay_group(rows[0]["store"], rows[0]["group_id"], rows)
        return pa.Table.from_pylist(getattr(out, kind), schema=schema)

    return run


def _group_table(groups: DataFrame, kind: str) -> DataFrame:
    schema = from_arrow_schema(GROUP_TABLES[kind])
    return groups.groupBy("store", "group_id").applyInArrow(_replayer(kind), schema)


def _offset_commits(records: DataFrame) -> DataFrame:
    commits = records.where(F.col("type") == "OffsetCommit")
    keyed = ["store", "group_id", "commit_topic", "commit_partition"]
    live = ~F.col("tombstone")
    out = commits.groupBy(*keyed).agg(
        F.count(F.when(live, True)).alias("commits"),
        F.min("commit_timestamp").alias("first_commit_ms"),
        F.max("commit_timestamp").alias("last_commit_ms"),
        F.max_by("commit_offset", F.when(live, F.col("offset"))).alias("last_offset"),
        F.max_by("tombstone", "offset").alias("removed"),
        F.max_by("timestamp", "offset").alias("last_record_ms"),
    )
    span_min = (F.col("last_commit_ms") - F.col("first_commit_ms")) / 60_000.0
    out = (out.withColumn("commits_per_min",
                          F.when(span_min > 0, F.col("commits") / span_min))
           .withColumn("removed_ms", F.when(F.col("removed"), F.col("last_record_ms")))
           .drop("last_record_ms"))
    sent = (records.where((F.col("type") == "TxnOffsetCommit") & live).groupBy(*keyed)
            .agg(F.count(F.lit(1)).alias("transactional_offsets")))
    return tables.with_transactional_offsets(out, sent)


def commits_per_minute(records: DataFrame) -> DataFrame:
    commits = records.where((F.col("type") == "OffsetCommit") & ~F.col("tombstone"))
    return (commits.groupBy("store", "group_id",
                            (F.floor(F.col("commit_timestamp") / 60_000) * 60_000)
                            .alias("minute_ms"))
            .count())


def reference_tables(spark: SparkSession, log_dirs: list[str],
                     retention_minutes: int = tables.DEFAULT_RETENTION_MINUTES
                     ) -> dict[str, DataFrame]:
    """The six tables, ``commits_per_minute`` and ``records`` (the records view)."""
    records = read_stores(spark, log_dirs).cache()
    groups = (records.where(F.col("type").isin(*GROUP_RECORD_TYPES))
              .select(*GROUP_COLUMNS)).cache()
    runs = _group_table(groups, "runs")
    rebalances = _group_table(groups, "rebalances")
    state = _group_table(groups, "state")
    commits = _offset_commits(records)
    as_of = records.groupBy("store").agg(F.max("timestamp").alias("as_of_ms"))
    expiration = tables.offset_expiration(commits, state, as_of, retention_minutes)
    return {
        "records": records,
        "assignment_runs": runs,
        "member_timeline": _group_table(groups, "timeline"),
        "rebalances": rebalances,
        "offset_commits": commits,
        "offset_expiration": expiration,
        "group_summary": tables.group_summary(runs, rebalances, state, expiration),
        "commits_per_minute": commits_per_minute(records),
    }
