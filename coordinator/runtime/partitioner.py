"""Which coordinator partition owns a group: Kafka's ``Utils.abs(groupId.hashCode()) % n``."""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around), as a signed int."""
    h = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        h = (31 * h + ((data[index] << 8) | data[index + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    return (java_string_hash(group_id) & 0x7FFFFFFF) % num_partitions
