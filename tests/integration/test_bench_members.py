"""``python -m coordinator bench members`` end to end at a small scale: real server processes,
the load generator's members over TCP in a process of their own, the probe, one JSON object."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coordinator.testing.server_process import ROOT


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_bench_members_reports_rss_per_member_and_that_the_server_answered() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator", "bench", "members", "--members", "60",
         "--groups", "3", "--connections", "6", "--join-s", "0.2", "--hold-s", "0.2",
         "--profile", "test", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=170, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["members"] == 60
    assert [case["groups"] for case in result["cases"]] == [3]
    for case in result["cases"]:
        assert case["stable_s"] is not None, case
        assert case["answering"] and case["probe_errors"] == 0, case
        assert case["probe_heartbeats"] > 0, case
        assert case["rss_mb"] >= case["rss_before_mb"] > 0, case
        assert case["peak_rss_mb"] >= case["rss_mb"], case
        assert 0 < case["bytes_per_member"] < 1_000_000, case
