"""Errors raised by the store."""

from __future__ import annotations

import errno


class StorageError(Exception):
    """Base class of the store's own errors (OSErrors from the disk propagate as they are)."""


class CorruptLogError(StorageError):
    """A partition's log is corrupt somewhere other than its tail; it cannot be loaded safely."""

    def __init__(self, partition: int, path: str, position: int, reason: str) -> None:
        super().__init__(
            f"partition {partition}: corrupt log in {path} at byte {position}: {reason}; "
            "refusing to load it (the data after this point cannot be trusted to be complete)"
        )
        self.partition = partition
        self.path = path
        self.position = position
        self.reason = reason


class LogFailedError(StorageError):
    """A write failed and the partial bytes could not be removed; reopen the log to recover."""


class RecordDecodeError(StorageError):
    """Record key or value bytes that do not decode."""


class UnknownRecordTypeError(RecordDecodeError):
    """A record key with a type id this build does not know."""


class StoreFullError(OSError):
    """The store's ``max_bytes`` cap was reached; an ``OSError`` with errno ``ENOSPC``."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)
