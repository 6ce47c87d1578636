"""Stored records -> Arrow batches, without Spark."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import cast

from pipeline.rows import record_batches
from pipeline.schema import ARROW_SCHEMA
from pipeline.segments import list_segments, read_segment
from pipeline.synthetic import write_store
from storage.dump import dump


def test_many_batches_lose_no_record(tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, 3000, partitions=1, consumer_groups=2, classic_groups=1)
    types: Counter[str] = Counter()
    offsets: list[int] = []
    for segment in list_segments([str(store)]):
        if segment.log != "__consumer_offsets":
            continue
        for batch in record_batches(segment.store, segment.log, segment.partition,
                                    read_segment(segment), batch_rows=97):
            assert batch.schema == ARROW_SCHEMA
            assert batch.num_rows <= 97
            # neither column has nulls: every row has a type and an offset
            types.update(cast("list[str]", batch.column("type").to_pylist()))
            offsets += cast("list[int]", batch.column("offset").to_pylist())
    expected = list(dump(store))
    assert sorted(offsets) == [r["offset"] for r in expected]
    assert types == Counter(r["type"] for r in expected)


def test_undecodable_record_gets_a_row(tmp_path: Path) -> None:
    records = [(0, 5, b"\x00\x01garbage", b"\x00\x00"), (1, 6, b"\x7f\x00", None)]
    (batch,) = list(record_batches("s", "__consumer_offsets", 0, records))
    rows = batch.to_pylist()
    assert [r["type"] for r in rows] == ["Undecodable", "Undecodable"]
    assert all(r["error"] for r in rows)
    assert [r["tombstone"] for r in rows] == [False, True]
