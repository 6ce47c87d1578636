"""The analytics tables, as Spark DataFrames over the ``coordinator-log`` source's ``digest``
view (:mod:`pipeline.digest`).

The group tables' rows come replayed from the digest (each group's records in log order,
:mod:`pipeline.replay`, once for all four of them, in the task that read its coordinator
partition); the offset tables merge the per-segment partial aggregates of the digest with Spark
SQL.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipeline.digest import GROUP, MINUTE, OFFSETS, SEGMENT, TXN
from pipeline.outputs import GROUP_TABLES, GROUP_TABLES_UNION

TABLE_NAMES = ("assignment_runs", "member_timeline", "rebalances", "offset_commits",
               "offset_expiration", "group_summary")
DEFAULT_RETENTION_MINUTES = 10080  # Kafka's offsets.retention.minutes


def group_tables(digest: DataFrame) -> DataFrame:
    """``runs``, ``timeline``, ``rebalances`` and ``state`` of every group, from one replay of
    each group, in one DataFrame (:data:`pipeline.outputs.GROUP_TABLES_UNION`)."""
    return digest.where(F.col("kind") == GROUP).select(*GROUP_TABLES_UNION.names)


def group_table(tables: DataFrame, kind: str) -> DataFrame:
    """One of :func:`group_tables`' tables: ``runs``, ``timeline``, ``rebalances`` or
    ``state``."""
    return (tables.where(F.col("table") == kind)
            .select(*(f.name for f in GROUP_TABLES[kind])))


def record_count(digest: DataFrame) -> int:
    """How many records the stores hold."""
    total = digest.where(F.col("kind") == SEGMENT).agg(F.sum("records")).first()
    return int(total[0] or 0) if total is not None else 0


def store_ends(digest: DataFrame) -> DataFrame:
    """Each store's last record time (``as_of_ms``)."""
    return (digest.where(F.col("kind") == SEGMENT).groupBy("store")
            .agg(F.max("timestamp").alias("as_of_ms")))


def offset_commits(digest: DataFrame) -> DataFrame:
    """Per group, topic and partition: commits, first/last commit, rate, last offset, whether
    the offset was removed (its last record a tombstone), and the offsets sent inside
    transactions (``transactional_offsets``, committed or aborted; ``transactional``: any)."""
    partial = digest.where(F.col("kind") == OFFSETS)
    keyed = ["store", "group_id", "commit_topic", "commit_partition"]
    sent_in_transactions = (digest.where(F.col("kind") == TXN).groupBy(*keyed)
                            .agg(F.sum("commits").alias("transactional_offsets")))
    out = partial.groupBy(*keyed).agg(
        F.sum("commits").alias("commits"),
        F.min("first_commit_ms").alias("first_commit_ms"),
        F.max("last_commit_ms").alias("last_commit_ms"),
        F.max_by("commit_offset", "live_offset").alias("last_offset"),
        F.max_by("tombstone", "offset").alias("removed"),
        F.max_by("timestamp", "offset").alias("last_record_ms"),
    )
    return with_transactional_offsets(_commit_columns(out), sent_in_transactions)


def _commit_columns(out: DataFrame) -> DataFrame:
    span_min = (F.col("last_commit_ms") - F.col("first_commit_ms")) / 60_000.0
    return (out.withColumn("commits_per_min",
                           F.when(span_min > 0, F.col("commits") / span_min))
            .withColumn("removed_ms", F.when(F.col("removed"), F.col("last_record_ms")))
            .drop("last_record_ms"))


def with_transactional_offsets(commits: DataFrame, sent: DataFrame) -> DataFrame:
    """``commits`` (keyed by store, group, commit topic and partition) with the offsets sent
    inside transactions per key (``sent``), and the key columns' table names."""
    keyed = ["store", "group_id", "commit_topic", "commit_partition"]
    return (commits.join(sent, keyed, "left")
            .withColumn("transactional_offsets",
                        F.coalesce(F.col("transactional_offsets"), F.lit(0)).cast("long"))
            .withColumn("transactional", F.col("transactional_offsets") > 0)
            .withColumnRenamed("commit_topic", "topic")
            .withColumnRenamed("commit_partition", "topic_partition"))


def commits_per_minute(digest: DataFrame) -> DataFrame:
    """Commits per group per minute (for the report's plot)."""
    return (digest.where(F.col("kind") == MINUTE)
            .groupBy("store", "group_id", "minute_ms")
            .agg(F.sum("commits").alias("count")))


def offset_expiration(commits: DataFrame, state: DataFrame, as_of: DataFrame,
                      retention_minutes: int = DEFAULT_RETENTION_MINUTES) -> DataFrame:
    """When each committed offset expires under the rules in force, and which expired.

    KIP-211: an Empty classic group's offsets all expire ``offsets.retention.minutes`` after it
    became Empty; a live classic group's never do (nor, for consumer-protocol classic and
    consumer groups, those of topics it subscribes to); the others expire that long after their
    commit. ``as_of_ms`` is the store's last record time (``as_of``: :func:`store_ends`).
    """
    retention_ms = retention_minutes * 60_000
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
