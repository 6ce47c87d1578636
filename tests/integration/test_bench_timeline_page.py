"""``python -m coordinator bench timeline-page`` end to end at a small scale: it makes a real
store with ``bench storm``, draws the large group's page in headless Chromium, and reports one
JSON object."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_bench_timeline_page_draws_a_storms_store() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator", "bench", "timeline-page", "--json", "--members",
         "30", "--runs", "1",
         # a shorter storm (its churn still replaces members), at the broker's shortest
         # heartbeat interval: the group settles within a second instead of ~5 s
         "--storm-duration-s", "2", "--storm-heartbeat-interval-ms", "500"],
        capture_output=True, text=True, timeout=280, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    row = json.loads(done.stdout.splitlines()[-1])
    assert row["group"] == "storm-large"
    # 30 members, and those the churn phase replaced: a lane each, every one assigned
    assert row["lanes"] >= 30 and row["bars"] >= 30 and row["markers"] > row["lanes"]
    assert row["events"] > row["lanes"]
    assert 0 < row["render_ms"] <= row["ready_ms"]
    assert row["load_s"] > 0 and row["reference_load_s"] > 0 and row["load_ratio"] > 0
