"""``python -m coordinator bench storm`` end to end at a small scale: a real server process, the
load generator's members and bystanders over TCP, the no-churn reference and all three
settings, one JSON line each."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

KEYS = {"phase", "interval_ms", "offload", "bystander_p50_ms", "bystander_p99_ms",
        "bystander_p99_vs_no_churn", "bystander_max_ms", "large_group_stable_s",
        "large_group_heartbeats_per_s", "bystander_samples", "churn_events", "machine_ns_per_op"}
NO_CHURN_KEYS = {"phase", "bystander_p50_ms", "bystander_p99_ms", "bystander_max_ms",
                 "bystander_samples", "machine_ns_per_op"}


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_bench_storm_reports_each_setting_as_a_json_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator", "bench", "storm", "--json", "--members", "6",
         "--topics", "4", "--partitions-per-topic", "3", "--duration-s", "2",
         "--churn-per-s", "2", "--bystander-groups", "3", "--bystander-members", "2",
         "--stable-timeout-s", "60",
         # the broker's shortest heartbeat interval (the bench's default is Kafka's 5 s): a
         # churned member learns its new assignment at its next heartbeat, so the large
         # group settles within a second of each phase instead of ~5 s
         "--heartbeat-interval-ms", "500"],
        capture_output=True, text=True, timeout=220, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    baseline, *rows = [json.loads(line) for line in done.stdout.splitlines()
                       if line.startswith("{")]
    # the reference: the bystanders alone, in the same run
    assert set(baseline) == NO_CHURN_KEYS and baseline["phase"] == "no-churn"
    assert 0 < baseline["bystander_p50_ms"] <= baseline["bystander_p99_ms"]
    assert baseline["bystander_samples"] > 0 and baseline["machine_ns_per_op"] > 0
    assert [(r["interval_ms"], r["offload"]) for r in rows] == [(0, False), (1000, False),
                                                                (1000, True)]
    for row in rows:
        assert set(row) == KEYS and row["phase"] == "churn"
        assert row["bystander_p99_vs_no_churn"] == round(
            row["bystander_p99_ms"] / baseline["bystander_p99_ms"], 2)
        # bystanders heartbeat once a second: two seconds of each setting gave samples
        assert 0 < row["bystander_p50_ms"] <= row["bystander_p99_ms"] <= row["bystander_max_ms"]
        assert row["large_group_stable_s"] is not None  # the churned group settled again
        assert row["large_group_heartbeats_per_s"] > 0  # its members' joins at least
