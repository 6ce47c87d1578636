"""Timers keyed by name: scheduling a key again replaces it. Pure: ``poll(now)`` hands back what
is due, so virtual-time tests drive it with a manual clock."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class _Entry:
    key: Any
    action: Callable[..., Any]
    cancelled: bool = False


class TimerQueue:
    """A heap of (deadline, sequence, entry) tuples (compared in C: every heartbeat schedules
    a session timer); a replaced or cancelled timer is marked and skipped when it surfaces."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, _Entry]] = []
        self._by_key: dict[Any, _Entry] = {}
        self._sequence = itertools.count()

    def schedule(self, key: Any, deadline_ms: int, action: Callable[..., Any]) -> None:
        self.cancel(key)
        entry = _Entry(key, action)
        self._by_key[key] = entry
        heapq.heappush(self._heap, (deadline_ms, next(self._sequence), entry))

    def cancel(self, key: Any) -> bool:
        entry = self._by_key.pop(key, None)
        if entry is None:
            return False
        entry.cancelled = True
        return True

    def is_scheduled(self, key: Any) -> bool:
        return key in self._by_key

    def next_deadline(self) -> int | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def poll(self, now_ms: int) -> list[tuple[Any, Callable[..., Any]]]:
        """Remove and return the (key, action) of every timer due at ``now_ms``, earliest first."""
        due = []
        while self._heap and self._heap[0][0] <= now_ms:
            entry = heapq.heappop(self._heap)[2]
            if entry.cancelled:
                continue
            del self._by_key[entry.key]
            due.append((entry.key, entry.action))
        return due

    def __len__(self) -> int:
        return len(self._by_key)
