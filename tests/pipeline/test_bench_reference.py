"""``pipeline bench``'s reference: the same records as JSON lines, read, written as Parquet and
aggregated by a plain job; and the bench's row with its ratio to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline import jvm_archive
from pipeline.reference import export_json_lines, plain_job
from pipeline.synthetic import write_store
from storage.dump import dump
from tests.pipeline import suite_archive


@pytest.mark.slow
def test_the_plain_job_reads_every_record_of_both_logs(spark: SparkSession,
                                                       tmp_path: Path) -> None:
    store = tmp_path / "store"
    written = write_store(store, 3000, partitions=2, consumer_groups=3, classic_groups=1)
    lines = tmp_path / "records.jsonl"
    assert export_json_lines(store, lines) == written
    first = json.loads(lines.read_text().splitlines()[0])
    assert first == {"log": "__consumer_offsets", **next(iter(dump(store)))}
    counted, seconds = plain_job(spark, lines, tmp_path / "parquet")
    assert counted == written and seconds > 0
    assert spark.read.parquet(str(tmp_path / "parquet")).count() == written


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_bench_row_carries_its_reference(tmp_path: Path,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    # the run's one class archive (tests/pipeline/suite_archive.py): the bench makes it if no
    # test has yet, or waits for the one making it, as two benches at once would
    env = {**os.environ, jvm_archive.ENV: str(suite_archive.path(tmp_path_factory))}
    done = subprocess.run([sys.executable, "-m", "pipeline", "bench", "--records", "3000",
                           "--keep-store", str(tmp_path / "store")],
                          env=env, capture_output=True, text=True, timeout=580, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    row = json.loads(done.stdout.splitlines()[-1])
    assert row["records"] >= 3000 and row["records_per_s"] > 0
    assert row["reference_records_per_s"] > 0 and row["machine_ns_per_op"] > 0
    # the ratio is of the unrounded rates; the row's rates are rounded to whole records/s
    assert row["ratio_to_reference"] == pytest.approx(
        row["records_per_s"] / row["reference_records_per_s"], abs=0.001)
