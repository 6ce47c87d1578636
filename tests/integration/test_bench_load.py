"""``bench load`` at a small scale: server starts on a store, each row with its same-run
ceiling (a raw sequential read of the same segment files)."""

from __future__ import annotations

import pytest

from coordinator.bench.store_load import run_size


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_bench_load_rows_carry_the_raw_read_of_the_same_files() -> None:
    rows = run_size(4000, 1, None)
    assert [row["case"] for row in rows] == ["without snapshots", "with snapshots"]
    for row in rows:
        assert row["records"] == 4000 and row["start_to_serving_s"] > 0
        assert row["raw_read_bytes_per_s"] > 0 and row["raw_read_records_per_s"] > 0
        assert row["start_to_serving_vs_raw_read"] > 0
