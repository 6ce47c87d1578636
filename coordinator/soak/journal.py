"""The chaos soak's journal: what the server acknowledged, as the load side saw it, and the
checks of what it later reads back.

Worker threads record an acknowledged commit (a ``commit`` call that returned without error for
that partition) and an acknowledged record (a delivery report without error). Committed offsets
of a group's partition only move forward in this load (every owner starts at the committed
offset and commits its position), so an offset read back below the highest one acknowledged is
a lost commit. A record acknowledged and absent from the log is lost; a value found more than
once is a duplicate.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

CommitKey = tuple[str, str, int]
"""(group, topic, partition)."""


@dataclass
class Journal:
    commits: int = 0
    records: int = 0
    highest_commit: dict[CommitKey, int] = field(default_factory=dict)
    acked_values: set[bytes] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def commit_acked(self, group: str, topic: str, partition: int, offset: int) -> None:
        key = (group, topic, partition)
        with self._lock:
            self.commits += 1
            if offset > self.highest_commit.get(key, -1):
                self.highest_commit[key] = offset

    def record_acked(self, value: bytes) -> None:
        with self._lock:
            self.records += 1
            self.acked_values.add(value)

    def commits_snapshot(self) -> dict[CommitKey, int]:
        """The highest acknowledged offset of every partition so far."""
        with self._lock:
            return dict(self.highest_commit)


def lost_commits(acked: Mapping[CommitKey, int], committed: Mapping[CommitKey, int]) -> int:
    """Partitions whose committed offset reads back below the highest one acknowledged (a
    partition with no committed offset at all reads back as -1)."""
    return sum(1 for key, offset in acked.items() if committed.get(key, -1) < offset)


def record_losses(acked: Iterable[bytes], stored: Counter[bytes]) -> tuple[int, int]:
    """(acknowledged values missing from the log, extra copies of values in the log)."""
    lost = sum(1 for value in acked if stored[value] == 0)
    duplicates = sum(count - 1 for count in stored.values() if count > 1)
    return lost, duplicates


def percentile(samples: Iterable[float], fraction: float) -> float | None:
    """The nearest-rank percentile (None without samples)."""
    ordered = sorted(samples)
    if not ordered:
        return None
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]
