"""A byte budget shared by the partitions of a store: the ``max_bytes`` cap."""

from __future__ import annotations

import threading

from storage.errors import StoreFullError


class SizeBudget:
    """Tracks the bytes a store holds; :meth:`reserve` raises :class:`StoreFullError` past the cap.

    ``max_bytes=None`` means no cap (bytes are still counted).
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def reserve(self, n: int) -> None:
        with self._lock:
            if self.max_bytes is not None and self._used + n > self.max_bytes:
                raise StoreFullError(
                    f"store size cap reached: {self._used} + {n} bytes > max_bytes {self.max_bytes}"
                )
            self._used += n

    def add(self, n: int) -> None:
        """Count bytes found on disk (at open) without checking the cap."""
        with self._lock:
            self._used += n

    def release(self, n: int) -> None:
        with self._lock:
            self._used = max(0, self._used - n)
