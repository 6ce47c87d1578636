"""One segment file of a topic partition: record batches back to back, and an in-memory index
of where each batch is (position, last offset, max timestamp).

Files are named like Kafka's: ``<base offset, 20 digits>.log``. Writes reuse the coordinator
store's ``ActiveSegment`` (pwrite at the tracked end; a failed write is truncated away).
"""

from __future__ import annotations

import bisect
import os
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage.segment import ActiveSegment

from .batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, BatchHeader, compute_crc, read_header

NO_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class ScanResult:
    valid_end: int
    error: str | None


class Segment:
    def __init__(self, base_offset: int, path: Path, size: int = 0) -> None:
        self.base_offset = base_offset
        self.path = path
        self.file = ActiveSegment(base_offset, path, size)
        self.positions = array("q")
        self.last_offsets = array("q")
        self.max_timestamps = array("q")
        self.largest_timestamp = NO_TIMESTAMP

    @property
    def size(self) -> int:
        return self.file.size

    @property
    def is_empty(self) -> bool:
        return not self.positions

    @property
    def next_offset(self) -> int:
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    def index(self, position: int, last_offset: int, max_timestamp: int) -> None:
        self.positions.append(position)
        self.last_offsets.append(last_offset)
        self.max_timestamps.append(max_timestamp)
        if max_timestamp > self.largest_timestamp:
            self.largest_timestamp = max_timestamp

    def append(self, data: bytes, last_offset: int, max_timestamp: int) -> None:
        position = self.file.size
        self.file.append(data)
        self.index(position, last_offset, max_timestamp)

    def batch_end(self, i: int) -> int:
        return self.positions[i + 1] if i + 1 < len(self.positions) else self.file.size

    def first_batch_from(self, offset: int) -> int:
        """Index of the first batch whose last offset is >= ``offset`` (len if none)."""
        return bisect.bisect_left(self.last_offsets, offset)

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self.file.fd, size, position)

    def scan(self, check_crc: bool,
             on_batch: Callable[[BatchHeader], None] | None = None) -> ScanResult:
        """Index every whole, valid batch from the start; stop at the first that is not."""
        fd, size = self.file.fd, self.file.size
        pos = 0
        expected = self.base_offset
        while pos < size:
            if size - pos < HEADER_SIZE:
                return ScanResult(pos, f"truncated batch header ({size - pos} bytes)")
            header = read_header(os.pread(fd, HEADER_SIZE, pos))
            if header.magic != MAGIC_V2:
                return ScanResult(pos, f"bad magic {header.magic}")
            if header.length + LOG_OVERHEAD < HEADER_SIZE:
                return ScanResult(pos, f"bad batch length {header.length}")
            end = pos + header.size
            if end > size:
                return ScanResult(pos, f"truncated batch (needs {header.size} bytes, "
                                       f"{size - pos} left)")
            if header.base_offset < expected:
                return ScanResult(pos, f"batch offset {header.base_offset} below {expected}")
            if check_crc and compute_crc(os.pread(fd, header.size, pos)) != header.crc:
                return ScanResult(pos, "CRC32C mismatch")
            self.index(pos, header.last_offset, header.max_timestamp)
            if on_batch is not None:
                on_batch(header)
            expected = header.last_offset + 1
            pos = end
        return ScanResult(pos, None)

    def truncate(self, size: int) -> None:
        self.file.truncate(size)

    def fsync(self) -> None:
        self.file.fsync()

    def close(self) -> None:
        self.file.close()
