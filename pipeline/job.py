"""The full report job: read the stores, write every table as Parquet, then the report."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from pipeline import tables
from pipeline.progress import Progress
from pipeline.segments import list_segments
from pipeline.source import DIGEST, NAME, RECORDS


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


def parquet_rows(path: Path) -> int:
    """Rows of a Parquet table the job wrote, from its files' footers."""
    return sum(pq.read_metadata(part).num_rows for part in path.glob("part-*"))


def read_stores(spark: SparkSession, log_dirs: list[str], view: str = RECORDS,
                tasks: int | None = None) -> DataFrame:
    reader = spark.read.format(NAME).option("paths", json.dumps(log_dirs)).option("view", view)
    if tasks is not None:
        reader = reader.option("tasks", str(tasks))
    return reader.load()


def run(spark: SparkSession, options: JobOptions) -> JobResult:
    progress = Progress(total=8 if options.report else 7, quiet=options.quiet)
    segments = list_segments(options.log_dirs)
    progress.say(f"{len(options.log_dirs)} store(s), {len(segments)} segment file(s), "
                 f"{sum(s.size for s in segments) / 1e6:.1f} MB")
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    result = JobResult(records=0, segments=len(segments))

    with progress.stage("read the stores (groups replayed, offset commits per key: "
                        "one pass)"):
        # the one pass over the segment files: everything downstream reads this small digest
        # two tasks a core: a task costs Spark ~0.1 s besides its records
        tasks = 2 * spark.sparkContext.defaultParallelism
        digest = read_stores(spark, options.log_dirs, DIGEST, tasks).persist(
            StorageLevel.MEMORY_AND_DISK)
        result.records = tables.record_count(digest)
        progress.say(f"{result.records:,} records")
    groups = tables.group_tables(digest)  # replayed as the digest was read

    def write(name: str, df: DataFrame) -> DataFrame:
        with progress.stage(name):
            df.write.mode("overwrite").parquet(str(out / name))
            result.rows[name] = parquet_rows(out / name)
            progress.say(f"{name}: {result.rows[name]:,} rows")
        # the schema given: Spark need not run a job to read it from the files
        return df.sparkSession.read.schema(df.schema).parquet(str(out / name))

    runs = write("assignment_runs", tables.group_table(groups, "runs"))
    rebalances = write("rebalances", tables.group_table(groups, "rebalances"))
    # their plots are drawn on the driver while Spark writes the other tables
    with ThreadPoolExecutor(1, thread_name_prefix="report-plots") as drawing:
        group_plots = (drawing.submit(_draw_group_plots, out, options.assignment_interval_ms)
                       if options.report else None)
        write("member_timeline", tables.group_table(groups, "timeline"))
        state = tables.group_table(groups, "state")
        commits = write("offset_commits", tables.offset_commits(digest))
        expiration = write("offset_expiration", tables.offset_expiration(
            commits, state, tables.store_ends(digest), options.retention_minutes))
        write("group_summary", tables.group_summary(runs, rebalances, state, expiration))
        per_minute = tables.commits_per_minute(digest)
        if group_plots is not None:
            from pipeline.report import write_report

            with progress.stage("report.html and plots"):
                result.report = write_report(spark, out, per_minute, options,
                                             group_plots.result())
                progress.say(f"report: {result.report}")
    digest.unpersist()
    return result


def _draw_group_plots(out: Path, assignment_interval_ms: int) -> dict[str, Path]:
    from pipeline.report import draw_group_plots

    return draw_group_plots(out, assignment_interval_ms)
