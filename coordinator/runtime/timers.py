"""Timers keyed by name: scheduling a key again replaces it. Pure: ``poll(now)`` hands back what
is due, so virtual-time tests drive it with a manual clock."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(order=True, slots=True)
class _Entry:
    deadline_ms: int
    sequence: int
    key: Any = field(compare=False)
    action: Callable[..., Any] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class TimerQueue:
    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._by_key: dict[Any, _Entry] = {}
        self._sequence = itertools.count()

    def schedule(self, key: Any, deadline_ms: int, action: Callable[..., Any]) -> None:
        self.cancel(key)
        entry = _Entry(deadline_ms, next(self._sequence), key, action)
        self._by_key[key] = entry
        heapq.heappush(self._heap, entry)

    def cancel(self, key: Any) -> bool:
        entry = self._by_key.pop(key, None)
        if entry is None:
            return False
        entry.cancelled = True
        return True

    def is_scheduled(self, key: Any) -> bool:
        return key in self._by_key

    def next_deadline(self) -> int | None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0].deadline_ms if self._heap else None

    def poll(self, now_ms: int) -> list[tuple[Any, Callable[..., Any]]]:
        """Remove and return the (key, action) of every timer due at ``now_ms``, earliest first."""
        due = []
        while self._heap and self._heap[0].deadline_ms <= now_ms:
            entry = heapq.heappop(self._heap)
            if entry.cancelled:
                continue
            del self._by_key[entry.key]
            due.append((entry.key, entry.action))
        return due

    def __len__(self) -> int:
        return len(self._by_key)
