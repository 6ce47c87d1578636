"""One SparkSession for the whole pipeline suite: local[2], UI off, few shuffle partitions,
a JVM tuned to start fast. Java is a requirement of the suite, not a reason to skip. And one
odd store with the job's tables over it, shared by the tests that compare them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.job import JobOptions, JobResult, run
from pipeline.session import build_session
from pipeline.synthetic import START_MS, write_store
from storage.log import PartitionLog
from storage.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    OffsetCommitKey,
    OffsetCommitValue,
    TxnOffsetCommitKey,
    TxnOffsetCommitValue,
    encode_record,
)


def pytest_configure(config: pytest.Config) -> None:
    # PySpark 4.3 warns about pandas 3 on every conversion; the conversions used here work.
    config.addinivalue_line("filterwarnings",
                            "ignore:PySpark does not yet fully support pandas:FutureWarning")
    config.addinivalue_line("filterwarnings", "ignore:The copy keyword is deprecated")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", app_name="pipeline-tests", shuffle_partitions=2,
                            ui=False, progress=False, fast_start=True)
    try:
        yield session
    finally:
        session.stop()


SEGMENT_BYTES = 64 * 1024
LATE = START_MS + 30 * 24 * 3600 * 1000  # after everything write_store writes


@pytest.fixture(scope="session")
def odd_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic store with several segments per partition, then on cg-0's partition:
    offsets removed (one committed again), commit metadata off the bulk decoder's fast path
    (not ASCII, longer than 127 bytes), an offset commit and a current assignment that do not
    decode."""
    path = tmp_path_factory.mktemp("odd") / "store"
    write_store(path, 12_000, partitions=2, consumer_groups=3, classic_groups=2,
                segment_bytes=SEGMENT_BYTES)

    def commit(p: int, offset: int, metadata: str = "") -> tuple[bytes, bytes | None]:
        return encode_record(OffsetCommitKey(group="cg-0", topic="topic-0", partition=p),
                             OffsetCommitValue(offset=offset, metadata=metadata,
                                               commit_timestamp=LATE))

    tombstone = encode_record(OffsetCommitKey(group="cg-0", topic="topic-0", partition=0), None)
    removed_then_back = encode_record(
        OffsetCommitKey(group="cg-0", topic="topic-0", partition=1), None)
    member = ConsumerGroupCurrentMemberAssignmentKey(group_id="cg-0", member_id="m")
    with PartitionLog.open(path, 0, SEGMENT_BYTES) as log:  # cg-0 lives on partition 0
        log.append_batch([tombstone, removed_then_back], LATE)
        log.append_batch([commit(1, 7, "héllo"), commit(2, 8, "x" * 300), commit(3, 9, "ok")],
                         LATE + 61_000)
        log.append_batch([(commit(4, 1)[0], b"\x00\x00\x01"),  # does not decode
                          (encode_record(member, None)[0], b"\x00\x05")], LATE + 62_000)
        # an offset sent inside a transaction (pending), committed by its marker's batch
        pending = TxnOffsetCommitKey(group="cg-0", topic="topic-0", partition=3, producer_id=7)
        log.append_batch([encode_record(pending, TxnOffsetCommitValue(
            producer_epoch=0, offset=10, commit_timestamp=LATE + 63_000))], LATE + 63_000)
        log.append_batch([commit(3, 10), encode_record(pending, None)], LATE + 64_000)
        log.flush()
    return path


@pytest.fixture(scope="session")
def odd_job(spark: SparkSession, odd_store: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[JobResult, Path]:
    """The report job (no report.html) over ``odd_store`` on the local session."""
    out = tmp_path_factory.mktemp("odd-out")
    return run(spark, JobOptions([str(odd_store)], out, report=False, quiet=True)), out
