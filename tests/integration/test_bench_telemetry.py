"""``python -m coordinator bench telemetry`` end to end at a small scale: a real server, the
telemetry load's clients over TCP in a process of their own beside the heartbeat load, one
JSON line per phase and the summary."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coordinator.testing.server_process import ROOT


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_bench_telemetry_reports_both_phases_and_the_ratio() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator", "bench", "telemetry", "--clients", "30",
         "--connections", "3", "--rounds", "1", "--seconds", "1", "--warmup", "0.5",
         "--rate", "200", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=170, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    off, on, summary = (json.loads(line) for line in done.stdout.strip().splitlines())
    assert (off["phase"], on["phase"], summary["phase"]) == ("off", "on", "summary")
    assert off["instances"] == 0 and on["instances"] == 30
    assert on["series"] == 30 * 9  # every client's nine metrics on /metrics
    assert on["pushes_per_s"] > 10 and on["push_p99_ms"] > 0
    assert off["heartbeats_per_s"] > 100 and on["heartbeats_per_s"] > 100
    assert summary["p99_ratio"] > 0 and summary["rss_per_client_kb"] is not None
