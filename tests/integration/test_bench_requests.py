"""``bench heartbeats`` (KIP-848 members, closed and open loop) and ``bench commits``
(durable OffsetCommit) run end to end against a server process and report their keys; every
answer the load generators read was checked (correlation id, error codes)."""

from __future__ import annotations

import pytest

from coordinator.bench import commits, heartbeats

pytestmark = pytest.mark.slow

HEARTBEAT_KEYS = {"offered_per_s", "heartbeats_per_s", "p50_ms", "p99_ms", "max_ms",
                  "server_cpu_pct", "echo_heartbeats_per_s", "ratio_to_echo",
                  "machine_ns_per_op"}


def test_bench_heartbeats_closed_then_open_loop() -> None:
    rows = heartbeats.run_bench(connections=3, seconds=0.6, warmup=0.2, groups=3, members=4,
                                rates=[None, 400.0])
    assert isinstance(rows, list) and len(rows) == 2
    closed, opened = rows
    for row in rows:
        assert HEARTBEAT_KEYS <= row.keys()
        assert row["errors"] == 0, row["first_error"]
        assert row["heartbeats"] > 0 and 0 < row["p50_ms"] <= row["p99_ms"] <= row["max_ms"]
        assert row["server_cpu_pct"] > 0
        # the same load against the echo reference, in the same run
        assert row["echo_heartbeats_per_s"] > 0 and "echo_first_error" not in row
        assert row["ratio_to_echo"] == float(
            f"{row['heartbeats_per_s'] / row['echo_heartbeats_per_s']:.3g}")
        assert row["machine_ns_per_op"] > 0
    assert closed["offered_per_s"] is None
    assert opened["offered_per_s"] == 400.0
    # an open loop sends what is due, not more: its answers in the window are about the rate
    assert opened["heartbeats_per_s"] <= 400 * 1.25
    assert opened["echo_heartbeats_per_s"] <= 400 * 1.25


def test_bench_commits_one_and_eight_partitions_per_commit() -> None:
    one, eight = commits.run_bench([1, 8], clients=6, connections=2, seconds=0.6, warmup=0.2)
    for row, partitions in ((one, 1), (eight, 8)):
        assert row["partitions_per_commit"] == partitions
        assert row["errors"] == 0, row["first_error"]
        assert row["commits"] > 0 and 0 < row["p50_ms"] <= row["p99_ms"]
        assert row["offsets_per_s"] == row["commits_per_s"] * partitions
        assert row["coordinator.log.flush.interval.ms"] == 0  # every answer after its fsync
