"""``python -m coordinator log dump`` shows the records real commits wrote: one JSON object per
line, Kafka's record name as ``type``, Kafka's field names in ``key`` and ``value``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from coordinator.runtime import partition_for
from tests.harness import ServerProcess
from tests.integration.test_offsets_durability import (
    ROOT,
    TOPIC,
    Acked,
    ck_commit,
    create_topics,
    dump,
    kp_commit,
    newest_segment,
)

PARTITIONS = 3


@pytest.mark.slow
def test_log_dump_shows_the_records_of_real_commits(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    server = ServerProcess(log_dir, {"offsets.topic.num.partitions": str(PARTITIONS)}).start()
    try:
        create_topics(server.bootstrap, {TOPIC: 3})
        acked: Acked = {}
        before = time.time_ns() // 1_000_000
        kp_commit(server.bootstrap, "dump-kp", {(TOPIC, 0): 11, (TOPIC, 1): 12}, acked)
        ck_commit(server.bootstrap, "dump-ck", {(TOPIC, 2): 21}, acked)
        kp_commit(server.bootstrap, "dump-kp", {(TOPIC, 0): 13}, acked)
        after = time.time_ns() // 1_000_000
        rows = dump(log_dir)  # a running server's store can be read
    finally:
        server.stop()
        server.kill()

    for row in rows:
        assert set(row) == {"partition", "offset", "timestamp", "type", "key", "value"}
    commits = [row for row in rows if row["type"] == "OffsetCommit"]
    assert len(commits) == 4
    by_group: dict[str, list[dict]] = {}
    for row in commits:
        by_group.setdefault(row["key"]["group"], []).append(row)
        assert set(row["key"]) == {"group", "topic", "partition"}
        assert {"offset", "leaderEpoch", "metadata", "commitTimestamp",
                "expireTimestamp"} <= set(row["value"])
        assert row["key"]["topic"] == TOPIC
        assert row["partition"] == partition_for(row["key"]["group"], PARTITIONS)
        assert before <= row["value"]["commitTimestamp"] <= after
        assert before <= row["timestamp"] <= after
        assert row["value"]["expireTimestamp"] == -1  # no retention time: Kafka's default

    kp_rows = by_group["dump-kp"]
    assert [(r["key"]["partition"], r["value"]["offset"], r["value"]["metadata"])
            for r in kp_rows] == [(0, 11, "kp-11"), (1, 12, "kp-12"), (0, 13, "kp-13")]
    # one commit is one batch: its records share the batch timestamp, offsets go up by one
    assert kp_rows[0]["timestamp"] == kp_rows[1]["timestamp"]
    assert kp_rows[1]["offset"] == kp_rows[0]["offset"] + 1 < kp_rows[2]["offset"]
    [ck_row] = by_group["dump-ck"]
    assert (ck_row["key"]["partition"], ck_row["value"]["offset"]) == (2, 21)
    assert ck_row["value"]["leaderEpoch"] == -1

    # per partition, offsets start at 0 and run without gaps (nothing compacted yet)
    for partition in range(PARTITIONS):
        offsets = [r["offset"] for r in rows if r["partition"] == partition]
        assert offsets == list(range(len(offsets)))

    # --partition N: exactly that partition's rows (none for a partition without commits)
    for partition in range(PARTITIONS):
        only = dump(log_dir, partition)
        assert only == [r for r in rows if r["partition"] == partition]
        assert {r["partition"] for r in only} <= {partition}
        groups = {r["key"]["group"] for r in only if r["type"] == "OffsetCommit"}
        assert groups == {g for g in by_group if partition_for(g, PARTITIONS) == partition}


@pytest.mark.slow
def test_log_dump_is_read_only_and_skips_a_torn_tail(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    server = ServerProcess(log_dir, {"offsets.topic.num.partitions": "1"}).start()
    try:
        create_topics(server.bootstrap, {TOPIC: 1})
        acked: Acked = {}
        for offset in (1, 2, 3):
            kp_commit(server.bootstrap, "torn", {(TOPIC, 0): offset}, acked)
    finally:
        server.kill()
    segment = newest_segment(log_dir, 0)
    with segment.open("ab") as f:
        f.write(b"\x00\x00\x00\x40junk")
    damaged = segment.read_bytes()
    rows = dump(log_dir, 0)
    assert [r["value"]["offset"] for r in rows if r["type"] == "OffsetCommit"] == [1, 2, 3]
    assert segment.read_bytes() == damaged  # the dump did not truncate anything

    # the output is JSON lines a shell pipeline can use
    out = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", "--log-dirs",
                          str(log_dir), "--partition", "0"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.endswith("\n") and len(out.splitlines()) == len(rows)
    assert all(line.startswith("{") and line.endswith("}") for line in out.splitlines())
