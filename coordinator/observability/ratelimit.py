"""Rate-limited log lines: a client that repeats a bad request thousands of times a second
gets one line per interval, which says how many were left out since the last."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

MAX_KEYS = 1024


class LogRateLimit:
    def __init__(self, interval_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self._last: dict[Hashable, tuple[float, int]] = {}
        """Key -> when its last line was logged, and how many were left out since."""

    def allow(self, key: Hashable) -> int | None:
        """None: leave this line out; else log it, with the count of lines of ``key`` left out
        since the last one."""
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.interval_s:
            self._last[key] = (last[0], last[1] + 1)
            return None
        if last is None and len(self._last) >= MAX_KEYS:
            self._last.clear()
        self._last[key] = (now, 0)
        return 0 if last is None else last[1]
