"""``bench heartbeats`` runs on a SASL_SSL listener and reports its numbers, with its echo
reference over TLS."""

from __future__ import annotations

import pytest

from coordinator.bench.heartbeats import run_bench


@pytest.mark.slow
def test_bench_heartbeats_over_sasl_ssl() -> None:
    row = run_bench("SASL_SSL", "SCRAM-SHA-256", connections=2, seconds=0.5, warmup=0.1)
    assert isinstance(row, dict)  # one closed-loop run
    assert row["security_protocol"] == "SASL_SSL" and row["heartbeats"] > 0
    assert row["heartbeats_per_s"] > 0 and 0 < row["p50_ms"] <= row["p99_ms"]
    # the reference answered the same load over TLS (the load generator checked every answer)
    assert row["echo_heartbeats_per_s"] > 0 and "echo_first_error" not in row
    assert 0 < row["ratio_to_echo"]
