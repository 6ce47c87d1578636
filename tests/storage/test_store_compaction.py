"""Compaction keeps the latest record per key, drops old tombstones, and survives crashes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage import compaction
from storage.compaction import compact
from storage.log import PartitionLog, partition_dir

from .helpers import commit, tombstone

SEG = 300


def latest_view(records: list[tuple[int, int, bytes, bytes | None]]) -> dict[bytes, bytes | None]:
    view: dict[bytes, bytes | None] = {}
    for _, _, key, value in records:
        view[key] = value
    return view


def build(tmp_path: Path) -> tuple[PartitionLog, list[tuple[int, int, bytes, bytes | None]]]:
    plog = PartitionLog.open(tmp_path, 0, segment_bytes=SEG)
    for i in range(60):
        plog.append_batch([commit("g", i % 4, i), commit("h", i % 2, i)], 1_000 + i)
    plog.append_batch([tombstone("h", 0)], 1_000)  # old tombstone
    plog.append_batch([tombstone("h", 1)], 50_000)  # recent tombstone
    for i in range(10):  # push the tombstones into closed segments
        plog.append_batch([commit("z", i, i)], 60_000 + i)
    return plog, list(plog.read())


def test_keeps_latest_per_key(tmp_path: Path) -> None:
    plog, before = build(tmp_path)
    segments_before = len(plog.segments())
    result = compact(plog, tombstone_retention_ms=10_000, now_ms=55_000)
    after = list(plog.read())
    assert result.records_after < result.records_before
    assert result.tombstones_dropped == 1
    assert len(plog.segments()) < segments_before
    # same latest value per key, except the expired tombstone, which is gone
    expected = latest_view(before)
    del expected[tombstone("h", 0)[0]]
    assert latest_view(after) == expected
    keys = [k for _, _, k, _ in after]
    closed_end = plog.segments()[-1].base_offset
    closed_keys = [k for o, _, k, _ in after if o < closed_end]
    assert len(closed_keys) == len(set(closed_keys))  # one record per key in cleaned segments
    assert len(keys) >= len(set(keys))
    # offsets are preserved and increasing
    offsets = [o for o, *_ in after]
    assert offsets == sorted(offsets)
    assert set(offsets) <= {o for o, *_ in before}
    assert plog.next_offset == before[-1][0] + 1
    plog.append_batch([commit("g", 0, 999)], 70_000)
    plog.close()
    with PartitionLog.open(tmp_path, 0, segment_bytes=SEG) as again:
        assert list(again.read())[:-1] == after
        assert again.next_offset == before[-1][0] + 2


def test_recent_tombstone_is_kept(tmp_path: Path) -> None:
    plog, _ = build(tmp_path)
    compact(plog, tombstone_retention_ms=10_000, now_ms=55_000)
    values = {k: v for _, _, k, v in plog.read()}
    assert values[tombstone("h", 1)[0]] is None
    plog.close()


def test_compaction_is_idempotent(tmp_path: Path) -> None:
    plog, _ = build(tmp_path)
    compact(plog, 10_000, 55_000)
    once = list(plog.read())
    second = compact(plog, 10_000, 55_000)
    assert list(plog.read()) == once
    assert second.records_after == second.records_before
    plog.close()


def test_reader_started_before_compaction_sees_everything(tmp_path: Path) -> None:
    plog, before = build(tmp_path)
    it = plog.read()
    head = [next(it) for _ in range(3)]
    compact(plog, 10_000, 55_000)
    assert head + list(it) == before
    plog.close()


def _crash_on_nth_replace(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    real = os.replace
    calls = {"n": 0}

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt("simulated crash")
        real(src, dst)

    monkeypatch.setattr(compaction.os, "replace", replace)


@pytest.mark.parametrize(
    ("crash_at", "committed"),
    [(1, False), (2, True)],
    ids=["before-commit (.cleaned left)", "after-commit (.swap left)"],
)
def test_crash_mid_compaction_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_at: int, committed: bool
) -> None:
    plog, before = build(tmp_path)
    plog.flush()
    _crash_on_nth_replace(monkeypatch, crash_at)
    with pytest.raises(KeyboardInterrupt):
        compact(plog, 10_000, 55_000)
    monkeypatch.undo()
    plog.close()
    leftovers = {p.suffix for p in partition_dir(tmp_path, 0).iterdir()}
    assert (".swap" in leftovers) == committed
    assert (".cleaned" in leftovers) != committed

    with PartitionLog.open(tmp_path, 0, segment_bytes=SEG) as again:
        after = list(again.read())
        names = [p.name for p in partition_dir(tmp_path, 0).iterdir()]
        assert all(n.endswith(".log") for n in names), names
        expected = latest_view(before)
        old_tombstone = tombstone("h", 0)[0]
        if committed:  # the first group was swapped in; later groups may not have been
            assert len(after) < len(before)
            view = latest_view(after)
            view.pop(old_tombstone, None)
            assert view == {k: v for k, v in expected.items() if k != old_tombstone}
        else:
            assert after == before
            assert latest_view(after) == expected
        assert again.next_offset == before[-1][0] + 1
        compact(again, 10_000, 55_000)  # a later run finishes the job
        del expected[old_tombstone]
        assert latest_view(list(again.read())) == expected


def test_nothing_to_compact(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path, 0) as plog:
        plog.append_batch([commit("g", 0, 1)], 1)
        result = compact(plog, 0, 10)
        assert result.segments_before == 0
        assert len(list(plog.read())) == 1


def test_compaction_releases_budget(tmp_path: Path) -> None:
    plog, _ = build(tmp_path)
    used = plog.budget.used
    assert used == plog.size_bytes
    compact(plog, 10_000, 55_000)
    assert plog.budget.used == plog.size_bytes < used
    plog.close()
