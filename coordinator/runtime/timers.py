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
    deadline_ms: int = 0
    cancelled: bool = False


class TimerQueue:
    """A heap of (deadline, sequence, entry) tuples (compared in C: every heartbeat schedules
    a session timer); a replaced or cancelled timer is marked and skipped when it surfaces. A
    timer scheduled again for later (a session timeout each heartbeat pushes back) keeps its
    heap entry and only moves its deadline: the entry, surfacing before it, goes back in at
    the new deadline. So the heap holds about one entry per timer, not one per heartbeat."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, _Entry]] = []
        self._by_key: dict[Any, _Entry] = {}
        self._sequence = itertools.count()

    def schedule(self, key: Any, deadline_ms: int, action: Callable[..., Any]) -> None:
        entry = self._by_key.get(key)
        if entry is not None and deadline_ms >= entry.deadline_ms:
            entry.deadline_ms = deadline_ms
            entry.action = action
            return
        self.cancel(key)
        entry = _Entry(key, action, deadline_ms)
        self._by_key[key] = entry
        heapq.heappush(self._heap, (deadline_ms, next(self._sequence), entry))

    def postpone(self, key: Any, deadline_ms: int) -> bool:
        """Move the scheduled timer of ``key``, with its action, to ``deadline_ms`` if that is
        not earlier; False (and nothing changed) if it is not scheduled or would move earlier."""
        entry = self._by_key.get(key)
        if entry is None or deadline_ms < entry.deadline_ms:
            return False
        entry.deadline_ms = deadline_ms
        return True

    def cancel(self, key: Any) -> bool:
        entry = self._by_key.pop(key, None)
        if entry is None:
            return False
        entry.cancelled = True
        return True

    def is_scheduled(self, key: Any) -> bool:
        return key in self._by_key

    def deadline(self, key: Any) -> int | None:
        """When the timer of ``key`` fires, if it is scheduled."""
        entry = self._by_key.get(key)
        return None if entry is None else entry.deadline_ms

    def next_deadline(self) -> int | None:
        heap = self._heap
        while heap and (heap[0][2].cancelled or heap[0][2].deadline_ms > heap[0][0]):
            entry = heapq.heappop(heap)[2]
            if not entry.cancelled:
                heapq.heappush(heap, (entry.deadline_ms, next(self._sequence), entry))
        return heap[0][0] if heap else None

    def poll(self, now_ms: int) -> list[tuple[Any, Callable[..., Any]]]:
        """Remove and return the (key, action) of every timer due at ``now_ms``, earliest first."""
        due = []
        while self._heap and self._heap[0][0] <= now_ms:
            at, _, entry = heapq.heappop(self._heap)
            if entry.cancelled:
                continue
            if entry.deadline_ms > at:  # moved later since it was pushed
                heapq.heappush(self._heap, (entry.deadline_ms, next(self._sequence), entry))
                continue
            del self._by_key[entry.key]
            due.append((entry.key, entry.action))
        return due

    def __len__(self) -> int:
        return len(self._by_key)
