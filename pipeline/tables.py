"""The analytics tables, as Spark DataFrames over the ``coordinator-log`` rows.

Group tables replay each group's records in log order (:mod:`pipeline.replay`) with
``groupBy(store, group_id).applyInArrow``; the offset tables are Spark SQL aggregations.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from pipeline.outputs import GROUP_TABLES
from pipeline.replay import replay_group

GROUP_RECORD_TYPES = (
    "GroupMetadata",
    "ConsumerGroupMetadata",
    "ConsumerGroupMemberMetadata",
    "ConsumerGroupTargetAssignmentMetadata",
    "ConsumerGroupTargetAssignmentMember",
    "ConsumerGroupCurrentMemberAssignment",
    "ShareGroupMetadata",
    "ShareGroupMemberMetadata",
    "ShareGroupTargetAssignmentMetadata",
    "ShareGroupTargetAssignmentMember",
    "ShareGroupCurrentMemberAssignment",
    "StreamsGroupMetadata",
    "StreamsGroupMemberMetadata",
    "StreamsGroupTargetAssignmentMetadata",
    "StreamsGroupTargetAssignmentMember",
    "StreamsGroupCurrentMemberAssignment",
    "StreamsGroupTopology",
)
GROUP_COLUMNS = ("store", "group_id", "partition", "offset", "timestamp", "type", "tombstone",
                 "member_id", "epoch", "member_state", "assignment_timestamp", "partitions",
                 "subscribed_topics", "protocol_type", "classic_members", "active_tasks",
                 "standby_tasks")
TABLE_NAMES = ("assignment_runs", "member_timeline", "rebalances", "offset_commits",
               "offset_expiration", "group_summary")
DEFAULT_RETENTION_MINUTES = 10080  # Kafka's offsets.retention.minutes


def group_records(records: DataFrame) -> DataFrame:
    """The group records (no offset commits), only the columns the replay reads."""
    return (records.where(F.col("type").isin(*GROUP_RECORD_TYPES))
            .select(*GROUP_COLUMNS))


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


def group_table(groups: DataFrame, kind: str) -> DataFrame:
    """``runs``, ``timeline``, ``rebalances`` or ``state`` of every group."""
    schema = from_arrow_schema(GROUP_TABLES[kind])
    return groups.groupBy("store", "group_id").applyInArrow(_replayer(kind), schema)


def offset_commits(records: DataFrame) -> DataFrame:
    """Per group, topic and partition: commits, first/last commit, rate, last offset, and
    whether the offset was removed (its last record a tombstone)."""
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
    return (out.withColumn("commits_per_min",
                           F.when(span_min > 0, F.col("commits") / span_min))
            .withColumn("removed_ms", F.when(F.col("removed"), F.col("last_record_ms")))
            .drop("last_record_ms")
            .withColumnRenamed("commit_topic", "topic")
            .withColumnRenamed("commit_partition", "topic_partition"))


def commits_per_minute(records: DataFrame) -> DataFrame:
    """Commits per group per minute (for the report's plot)."""
    commits = records.where((F.col("type") == "OffsetCommit") & ~F.col("tombstone"))
    return (commits.groupBy("store", "group_id",
                            (F.floor(F.col("commit_timestamp") / 60_000) * 60_000)
                            .alias("minute_ms"))
            .count())


def offset_expiration(commits: DataFrame, state: DataFrame, records: DataFrame,
                      retention_minutes: int = DEFAULT_RETENTION_MINUTES) -> DataFrame:
    """When each committed offset expires under the rules in force, and which expired.

    KIP-211: an Empty classic group's offsets all expire ``offsets.retention.minutes`` after it
    became Empty; a live classic group's never do (nor, for consumer-protocol classic and
    consumer groups, those of topics it subscribes to); the others expire that long after their
    commit. ``as_of_ms`` is the store's last record time.
    """
    retention_ms = retention_minutes * 60_000
    as_of = records.groupBy("store").agg(F.max("timestamp").alias("as_of_ms"))
    st = state.select(
        "store", "group_id", F.col("group_type"), F.col("state").alias("group_state"),
        F.col("state_timestamp").alias("group_state_ms"), "subscribed_topics",
        F.col("protocol_type"))
    joined = commits.join(st, ["store", "group_id"], "left").join(as_of, "store", "left")
    subscribed = F.coalesce(F.array_contains("subscribed_topics", F.col("topic")), F.lit(False))
    live = F.col("group_state") == "live"
    rule: Column = (
        F.when(F.col("group_state") == "empty", "group-empty")
        .when(live & subscribed, "subscribed")
        .when(live & (F.col("group_type") == "classic")
              & (F.col("protocol_type") != "consumer"), "classic-live")
        .when(F.col("group_state").isNull() | (F.col("group_state") == "dead"), "no-group")
        .otherwise("unsubscribed")
    )
    expires: Column = (
        F.when(F.col("rule") == "group-empty", F.col("group_state_ms") + retention_ms)
        .when(F.col("rule").isin("subscribed", "classic-live"), F.lit(None))
        .otherwise(F.col("last_commit_ms") + retention_ms)
    )
    status: Column = (
        F.when(F.col("removed") & F.col("expires_at_ms").isNotNull()
               & (F.col("removed_ms") >= F.col("expires_at_ms")), "expired")
        .when(F.col("removed"), "deleted")
        .when(F.col("expires_at_ms") <= F.col("as_of_ms"), "due")
        .when(F.col("expires_at_ms").isNull(), "kept")
        .otherwise("pending")
    )
    return (joined.withColumn("rule", rule)
            .withColumn("expires_at_ms", expires.cast("long"))
            .withColumn("status", status)
            .withColumn("retention_minutes", F.lit(retention_minutes))
            .select("store", "group_id", "group_type", "group_state", "topic",
                    "topic_partition", "last_commit_ms", "removed", "removed_ms", "rule",
                    "retention_minutes", "expires_at_ms", "as_of_ms", "status"))


def group_summary(runs: DataFrame, rebalances: DataFrame, state: DataFrame,
                  expiration: DataFrame) -> DataFrame:
    keys = ["store", "group_id", "group_type"]
    run_stats = runs.groupBy(*keys).agg(
        F.count("*").alias("runs"),
        F.sum("partitions_moved").alias("partitions_moved"),
        F.sum("standby_tasks_moved").alias("standby_tasks_moved"),  # streams groups only
        F.max("epoch").alias("last_run_epoch"),
        F.percentile("since_previous_ms", 0.5).alias("p50_run_interval_ms"),
    )
    done = F.col("status") == "completed"
    reb_stats = rebalances.groupBy(*keys).agg(
        F.count("*").alias("rebalances"),
        F.count(F.when(done, True)).alias("rebalances_completed"),
        F.percentile(F.when(done, F.col("duration_ms")), 0.5).alias("p50_rebalance_ms"),
        F.percentile(F.when(done, F.col("duration_ms")), 0.99).alias("p99_rebalance_ms"),
        F.max(F.when(done, F.col("duration_ms"))).alias("max_rebalance_ms"),
    )
    exp = expiration.groupBy("store", "group_id").agg(
        F.count("*").alias("offsets"),
        F.min(F.when(~F.col("removed"), F.col("expires_at_ms"))).alias("next_expiry_ms"),
        F.count(F.when(F.col("status") == "expired", True)).alias("offsets_expired"),
    )
    st = state.select(*keys, F.col("state"), F.col("members").alias("members_now"),
                      F.col("epoch").alias("epoch_now"))
    return (st.join(run_stats, keys, "full").join(reb_stats, keys, "full")
            .join(exp, ["store", "group_id"], "full")
            .withColumn("group_type", F.coalesce("group_type", F.lit("none")))
            .na.fill(0, ["runs", "partitions_moved", "rebalances", "rebalances_completed"])
            .orderBy("store", "group_id", "group_type"))
