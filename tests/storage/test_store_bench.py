"""``bench store``'s replay and its same-run ceiling: a raw sequential read of the same segment
files (framing only), small."""

from __future__ import annotations

from pathlib import Path

from storage.bench import raw_read, run_store_replay, segment_files
from storage.store import Store


def test_the_raw_read_counts_every_record_of_every_segment(tmp_path: Path) -> None:
    with Store.open(tmp_path, 3) as store:
        for p in range(3):
            for n in range(4):
                store.partition(p).append_batch([(b"k%d" % i, b"v") for i in range(n + 1)], 1)
        store.flush()
    files = segment_files(tmp_path)
    assert len(files) == 3 and all(f.suffix == ".log" for f in files)
    ceiling = raw_read(files)
    assert ceiling["raw_read_records"] == 3 * (1 + 2 + 3 + 4)
    assert ceiling["raw_read_bytes_per_s"] > 0 and ceiling["raw_read_records_per_s"] > 0


def test_the_replay_row_carries_its_ceiling() -> None:
    row = run_store_replay(records=3000, partitions=4)
    assert row["records"] == 3000
    assert row["raw_read_s"] >= 0  # (rounded: a small store reads in well under 0.1 ms)
    for key in ("raw_read_bytes_per_s", "raw_read_records_per_s",
                "replay_vs_raw_read", "replay_records_per_s"):
        assert row[key] > 0, key
    assert row["replay_vs_raw_read"] == round(
        row["replay_records_per_s"] / row["raw_read_records_per_s"], 4)
