"""``python -m pipeline report|bench``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.tables import DEFAULT_RETENTION_MINUTES


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pipeline",
                                description="Rebalance analytics over coordinator stores.")
    sub = p.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="tables (Parquet), report.html and PNG plots")
    rep.add_argument("--log-dirs", action="append", required=True,
                     help="a coordinator's log.dirs (repeat for several stores)")
    rep.add_argument("--out", required=True, type=Path, help="output directory")
    rep.add_argument("--master", default="local[*]",
                     help="Spark master URL (default local[*]; a cluster URL submits there)")
    rep.add_argument("--offsets-retention-minutes", type=int, default=DEFAULT_RETENTION_MINUTES,
                     help="offsets.retention.minutes in force (default %(default)s)")
    rep.add_argument("--assignment-interval-ms", type=int, default=1000,
                     help="group.consumer.assignment.interval.ms, drawn in the runs plot")
    rep.add_argument("--quiet", action="store_true", help="no progress lines")
    sub.add_parser("archive", help="make the JVM class archive later runs start from "
                   "(pipeline/jvm_archive.py; `bench` makes it when missing)")
    bench = sub.add_parser("bench", help="records/s of the full report on a synthetic store")
    bench.add_argument("--records", type=int, default=5_000_000)
    bench.add_argument("--master", default="local[2]")
    bench.add_argument("--keep-store", type=Path, default=None,
                       help="write (or reuse) the synthetic store here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "archive":
        from pipeline import jvm_archive

        path = jvm_archive.archive_path()
        if path is None:
            print(f"{jvm_archive.ENV}={jvm_archive.OFF}: no archive", file=sys.stderr)
            return 2
        seconds = jvm_archive.build(path)
        print(json.dumps({"archive": str(path), "bytes": path.stat().st_size,
                          "seconds": round(seconds, 1)}))
        return 0
    if args.command == "bench":
        from pipeline.bench import bench

        print(json.dumps(bench(args.records, args.master, args.keep_store)))
        return 0
    from pipeline import jvm_archive
    from pipeline.job import JobOptions, run
    from pipeline.session import build_session

    hint = None if args.quiet else jvm_archive.missing_hint()
    if hint is not None:
        print(hint, file=sys.stderr, flush=True)
    spark = build_session(args.master, progress=not args.quiet)
    try:
        result = run(spark, JobOptions(
            args.log_dirs, args.out, retention_minutes=args.offsets_retention_minutes,
            assignment_interval_ms=args.assignment_interval_ms, quiet=args.quiet))
    finally:
        spark.stop()
    print(json.dumps({"records": result.records, "segments": result.segments,
                      "tables": result.rows, "report": str(result.report)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
