"""``python -m pipeline bench``: the full report over a synthetic store of N records."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from pipeline import jvm_archive
from pipeline.job import JobOptions, run
from pipeline.session import build_session
from pipeline.synthetic import write_store


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
        return {"records": result.records, "segments": result.segments, "master": master,
                "seconds": round(elapsed, 2),
                "records_per_s": round(result.records / elapsed),
                "tables": json.dumps(result.rows),
                "class_archive": str(archive) if archive is not None else None}
    finally:
        shutil.rmtree(work, ignore_errors=True)
