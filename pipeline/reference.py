"""``python -m pipeline bench``'s reference: a plain PySpark job over the same records.

The store's records are exported as JSON lines (``storage.dump``'s rows, one per record: its
log, partition, offset, timestamp, type, key and value; untimed), then timed in a Spark
session of the bench's settings started for it (its JVM as cold as the pipeline's): read them
(key and value as their JSON text, a given schema, so no inference pass), write them as
Parquet, and one aggregation (records and last offset per record type). What a Spark job
costs on this machine for these records with none of the pipeline's work, so the pipeline's
records/s can be given as a share of it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from pipeline.segments import LOGS
from storage.dump import dump

SCHEMA = StructType([
    StructField("log", StringType()), StructField("partition", LongType()),
    StructField("offset", LongType()), StructField("timestamp", LongType()),
    StructField("type", StringType()),
    StructField("key", StringType()), StructField("value", StringType()),
])


def export_json_lines(store: Path, out: Path) -> int:
    """Every record of both of ``store``'s logs as one JSON line in ``out``; how many."""
    written = 0
    with out.open("w") as lines:
        for log in LOGS:
            for row in dump(store, topic=log):
                lines.write(json.dumps({"log": log, **row}, separators=(",", ":")))
                lines.write("\n")
                written += 1
    return written


def plain_job(spark: SparkSession, lines: Path, out: Path) -> tuple[int, float]:
    """Read ``lines``, write them as Parquet under ``out``, then count records per type:
    (records counted, seconds)."""
    started = time.perf_counter()
    records = spark.read.schema(SCHEMA).json(str(lines))
    records.write.mode("overwrite").parquet(str(out))
    per_type = (spark.read.schema(SCHEMA).parquet(str(out)).groupBy("type")
                .agg(F.count("*").alias("records"), F.max("offset").alias("last_offset"))
                .collect())
    return sum(row["records"] for row in per_type), time.perf_counter() - started
