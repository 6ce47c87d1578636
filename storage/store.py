"""All coordinator partitions of one ``log.dirs`` directory."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from storage.budget import SizeBudget
from storage.errors import CorruptLogError
from storage.log import DEFAULT_SEGMENT_BYTES, PartitionLog

DEFAULT_NUM_PARTITIONS = 50  # Kafka's offsets.topic.num.partitions


class Store:
    """The logs of partitions ``0 .. num_partitions-1`` under ``log_dir``.

    A partition whose log is corrupt (see :class:`CorruptLogError`) does not stop the others:
    its error is in :attr:`errors` and :meth:`partition` raises it.
    """

    def __init__(
        self,
        log_dir: Path,
        num_partitions: int,
        segment_bytes: int,
        budget: SizeBudget,
    ) -> None:
        self.log_dir = log_dir
        self.num_partitions = num_partitions
        self.segment_bytes = segment_bytes
        self.budget = budget
        self.logs: dict[int, PartitionLog] = {}
        self.errors: dict[int, CorruptLogError] = {}

    @classmethod
    def open(
        cls,
        log_dir: str | os.PathLike[str],
        num_partitions: int = DEFAULT_NUM_PARTITIONS,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        *,
        max_bytes: int | None = None,
        partitions: Iterable[int] | None = None,
    ) -> Store:
        """Open (and recover) every partition, or only ``partitions`` (open the rest later with
        :meth:`open_partition`, e.g. to load them one at a time)."""
        if num_partitions <= 0:
            raise ValueError("num_partitions must be positive")
        path = Path(log_dir)
        path.mkdir(parents=True, exist_ok=True)
        store = cls(path, num_partitions, segment_bytes, SizeBudget(max_bytes))
        for p in range(num_partitions) if partitions is None else partitions:
            try:
                store.open_partition(p)
            except CorruptLogError:
                pass  # recorded in store.errors
        return store

    def open_partition(self, partition: int) -> PartitionLog:
        """Open (recover) one partition; raises :class:`CorruptLogError` and records it."""
        if not 0 <= partition < self.num_partitions:
            raise ValueError(f"partition {partition} is not in 0..{self.num_partitions - 1}")
        if partition in self.logs:
            return self.logs[partition]
        try:
            plog = PartitionLog.open(
                self.log_dir, partition, self.segment_bytes, budget=self.budget
            )
        except CorruptLogError as exc:
            self.errors[partition] = exc
            raise
        self.errors.pop(partition, None)
        self.logs[partition] = plog
        return plog

    def partition(self, partition: int) -> PartitionLog:
        """The open log of ``partition``; raises its :class:`CorruptLogError` if it failed."""
        if partition in self.errors:
            raise self.errors[partition]
        try:
            return self.logs[partition]
        except KeyError:
            raise KeyError(f"partition {partition} is not open") from None

    __getitem__ = partition

    @property
    def size_bytes(self) -> int:
        return self.budget.used

    def flush(self, partitions: Iterable[int] | None = None) -> dict[int, int]:
        """fsync the given (default: all open) partitions; returns each one's durable offset."""
        targets = self.logs.keys() if partitions is None else partitions
        return {p: self.logs[p].flush() for p in list(targets)}

    def close(self) -> None:
        for plog in self.logs.values():
            plog.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
