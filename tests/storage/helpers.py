"""Shared helpers for the storage tests."""

from __future__ import annotations

from storage.records import OffsetCommitKey, OffsetCommitValue, encode_record


def commit(group: str, partition: int, offset: int) -> tuple[bytes, bytes | None]:
    key = OffsetCommitKey(group=group, topic="orders", partition=partition)
    return encode_record(key, OffsetCommitValue(offset=offset, commit_timestamp=offset))


def tombstone(group: str, partition: int) -> tuple[bytes, bytes | None]:
    return encode_record(OffsetCommitKey(group=group, topic="orders", partition=partition), None)
