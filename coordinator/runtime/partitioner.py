"""Which coordinator partition owns a group: Kafka's ``Utils.abs(groupId.hashCode()) % n``."""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around), as a signed int."""
    h = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        h = (31 * h + ((data[index] << 8) | data[index + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


_hashes: dict[str, int] = {}
_HASHES_KEPT = 100_000


def partition_for(group_id: str, num_partitions: int) -> int:
    h = _hashes.get(group_id)
    if h is None:  # every group request asks: each group id is hashed once (while kept)
        if len(_hashes) >= _HASHES_KEPT:
            _hashes.clear()
        h = _hashes[group_id] = java_string_hash(group_id)
    # Kafka's Utils.abs: Math.abs, except Integer.MIN_VALUE maps to 0.
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
