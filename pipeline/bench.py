"""``python -m pipeline bench``: the full report over a synthetic store of N records, and in the
same Spark session the reference (:mod:`pipeline.reference`): a plain job over the same
records exported as JSON lines (read, write Parquet, one aggregation). ``records_per_s`` is
the pipeline's, ``reference_records_per_s`` the plain job's, ``ratio_to_reference`` the first
over the second; ``machine_ns_per_op`` is the machine's Python speed (``storage.machine``)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from pipeline import jvm_archive
from pipeline.job import JobOptions, run
from pipeline.reference import export_json_lines, plain_job
from pipeline.session import build_session
from pipeline.synthetic import write_store
from storage.machine import KEY, machine_ns_per_op


def bench(records: int, master: str = "local[2]", keep: Path | None = None,
          report: bool = True) -> dict[str, float | int | str | None]:
    work = Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    store = keep if keep is not None else work / "store"
    try:
        marker = store / ".bench-records"
        if not (marker.exists() and marker.read_text() == str(records)):
            shutil.rmtree(store, ignore_errors=True)
            t0 = time.perf_counter()
            written = write_store(store, records, partitions=8, consumer_groups=24,
                                  classic_groups=8)
            marker.write_text(str(records))
            print(f"wrote {written:,} records in {time.perf_counter() - t0:.1f}s", flush=True)
        archive = jvm_archive.ensure()  # made once, like the store: the driver JVM's classes
        spark = build_session(master, shuffle_partitions=8, progress=False)
        try:
            t0 = time.perf_counter()
            result = run(spark, JobOptions([str(store)], work / "out", report=report))
            elapsed = time.perf_counter() - t0
        finally:
            spark.stop()
        t0 = time.perf_counter()
        exported = export_json_lines(store, work / "records.jsonl")
        export_s = time.perf_counter() - t0
        spark = build_session(master, shuffle_partitions=8, progress=False)
        try:
            counted, reference_s = plain_job(spark, work / "records.jsonl", work / "reference")
        finally:
            spark.stop()
        if not result.records == exported == counted:
            raise AssertionError(f"the job read {result.records} records, the export has "
                                 f"{exported}, the plain job counted {counted}")
        records_per_s = result.records / elapsed
        reference_per_s = counted / reference_s
        return {"records": result.records, "segments": result.segments, "master": master,
                "seconds": round(elapsed, 2),
                "records_per_s": round(records_per_s),
                "reference_seconds": round(reference_s, 2),
                "reference_records_per_s": round(reference_per_s),
                "ratio_to_reference": round(records_per_s / reference_per_s, 3),
                "export_seconds": round(export_s, 1),
                KEY: machine_ns_per_op(),
                "tables": json.dumps(result.rows),
                "class_archive": str(archive) if archive is not None else None}
    finally:
        shutil.rmtree(work, ignore_errors=True)
