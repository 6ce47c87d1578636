"""The full report job: read the stores, write every table as Parquet, then the report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from pipeline import tables
from pipeline.progress import Progress
from pipeline.segments import list_segments
from pipeline.source import NAME


@dataclass
class JobOptions:
    log_dirs: list[str]
    out: Path
    retention_minutes: int = tables.DEFAULT_RETENTION_MINUTES
    assignment_interval_ms: int = 1000  # group.consumer.assignment.interval.ms, for the plot
    report: bool = True
    quiet: bool = False


@dataclass
class JobResult:
    records: int
    segments: int
    rows: dict[str, int] = field(default_factory=dict)
    report: Path | None = None


def read_stores(spark: SparkSession, log_dirs: list[str]) -> DataFrame:
    return spark.read.format(NAME).option("paths", json.dumps(log_dirs)).load()


def run(spark: SparkSession, options: JobOptions) -> JobResult:
    progress = Progress(total=9 if options.report else 8, quiet=options.quiet)
    segments = list_segments(options.log_dirs)
    progress.say(f"{len(options.log_dirs)} store(s), {len(segments)} segment file(s), "
                 f"{sum(s.size for s in segments) / 1e6:.1f} MB")
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    records = read_stores(spark, options.log_dirs)
    result = JobResult(records=0, segments=len(segments))

    with progress.stage("scan the stores (decode every record, keep commits and groups)"):
        # Everything downstream reads this once-decoded copy, not the segment files again.
        records = records.persist(StorageLevel.MEMORY_AND_DISK)
        result.records = records.count()
        progress.say(f"{result.records:,} records")
    groups = tables.group_records(records).persist(StorageLevel.MEMORY_AND_DISK)

    def write(name: str, df: DataFrame) -> DataFrame:
        with progress.stage(name):
            df.write.mode("overwrite").parquet(str(out / name))
            written = df.sparkSession.read.parquet(str(out / name))
            result.rows[name] = written.count()
            progress.say(f"{name}: {result.rows[name]:,} rows")
        return written

    runs = write("assignment_runs", tables.group_table(groups, "runs"))
    write("member_timeline", tables.group_table(groups, "timeline"))
    rebalances = write("rebalances", tables.group_table(groups, "rebalances"))
    with progress.stage("group states at the end of the log"):
        state = tables.group_table(groups, "state").persist(StorageLevel.MEMORY_AND_DISK)
        progress.say(f"{state.count():,} groups")
    commits = write("offset_commits", tables.offset_commits(records))
    expiration = write("offset_expiration", tables.offset_expiration(
        commits, state, records, options.retention_minutes))
    write("group_summary", tables.group_summary(runs, rebalances, state, expiration))
    per_minute = tables.commits_per_minute(records)
    if options.report:
        from pipeline.report import write_report

        with progress.stage("report.html and plots"):
            result.report = write_report(spark, out, per_minute, options)
            progress.say(f"report: {result.report}")
    records.unpersist()
    groups.unpersist()
    state.unpersist()
    return result
