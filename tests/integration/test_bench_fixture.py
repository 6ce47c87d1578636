"""``python -m coordinator bench fixture --json``: one run, the keys, and first assignments
that do not wait for Kafka's default delays (3 s classic, 5 s consumer protocol)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_fixture_prints_its_numbers() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "coordinator", "bench", "fixture", "--json", "--runs", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    numbers = json.loads(result.stdout)
    assert numbers["profile"] == "test" and numbers["runs"] == 1
    for key in ("start_to_accepting_ms", "classic_first_assignment_ms",
                "consumer_first_assignment_ms"):
        assert numbers[key] > 0 and numbers["samples"][key] == [numbers[key]]
        assert key in numbers["targets_ms"]
    assert numbers["start_to_accepting_ms"] < 10_000
    assert numbers["classic_first_assignment_ms"] < 2_000
    assert numbers["consumer_first_assignment_ms"] < 2_000
