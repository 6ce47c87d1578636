"""One segment file of a topic partition: record batches back to back, and an in-memory index
of where each batch is (position, last offset, max timestamp).

Files are named like Kafka's: ``<base offset, 20 digits>.log``. Writes reuse the coordinator
store's ``ActiveSegment`` (pwrite at the tracked end; a failed write is truncated away).

A partition may have many segments and a server many partitions, so a segment holds no file
descriptor of its own: :data:`FILES`, one LRU for the process, keeps at most
:data:`MAX_OPEN_SEGMENT_FILES` descriptors open and closes the least recently used one to open
another (the next use reopens it, ``O_RDWR`` without truncating). A descriptor is used only
while the cache's lock is held, so an eviction (from any thread) never closes one in use; an
fsync in another thread goes through a ``dup`` of it. A new partition's first segment file is
created by its first append, not before.
"""

from __future__ import annotations

import bisect
import errno
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from storage.segment import ActiveSegment

from .batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, BatchHeader, compute_crc, read_header

MAX_OPEN_SEGMENT_FILES = 1024  # descriptors of topic segment files open at once, process-wide

NO_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class ScanResult:
    valid_end: int
    error: str | None


class DescriptorCache:
    """The open descriptors of segment files, least recently used first, at most ``capacity``."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.lock = threading.Lock()  # not re-entrant: a lease inside a lease would deadlock
        # rather than let its eviction close the outer lease's descriptor
        self._open: OrderedDict[SegmentFile, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def resize(self, capacity: int) -> None:
        """Change the cap (tests lower it); descriptors over it are closed at once."""
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        with self.lock:
            self.capacity = capacity
            while len(self._open) > capacity:
                self._evict()

    @contextmanager
    def lease(self, file: SegmentFile, create: bool) -> Iterator[int]:
        """An open descriptor of ``file``, valid inside the ``with`` block only."""
        with self.lock:
            yield self._descriptor(file, create)

    def _descriptor(self, file: SegmentFile, create: bool) -> int:
        if file.fd >= 0:
            self._open.move_to_end(file)
            return file.fd
        if file.closed:
            raise OSError(errno.EBADF, "segment file is closed", str(file.path))
        while len(self._open) >= self.capacity:
            self._evict()
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        try:
            fd = os.open(file.path, flags, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE) or not self._open:
                raise
            self._evict()  # the process limit is below our cap: make room and try once more
            fd = os.open(file.path, flags, 0o644)
        file.fd = fd
        file.exists = True
        self._open[file] = None
        return fd

    def _evict(self) -> None:
        victim, _ = self._open.popitem(last=False)
        self._close(victim)

    def forget(self, file: SegmentFile) -> None:
        """Close ``file``'s descriptor if it has one open."""
        with self.lock:
            if file in self._open:
                del self._open[file]
                self._close(file)

    @staticmethod
    def _close(file: SegmentFile) -> None:
        fd, file.fd = file.fd, -1
        os.close(fd)


FILES = DescriptorCache(MAX_OPEN_SEGMENT_FILES)


class SegmentFile(ActiveSegment):
    """A segment's file, opened on demand through :data:`FILES` (``fd`` is -1 while it is not
    open). ``exists=False``: the file is not on disk yet; the first append creates it."""

    def __init__(self, base_offset: int, path: Path, size: int, exists: bool) -> None:
        super().__init__(base_offset, path, size, open_now=False)
        self.exists = exists
        self.closed = False

    def lease(self, create: bool = False) -> AbstractContextManager[int]:
        """An open descriptor, valid inside the ``with`` block (``create``: make the file if
        it is not on disk)."""
        return FILES.lease(self, create)

    def create(self) -> None:
        with self.lease(create=True):
            pass

    def append(self, data: bytes) -> None:
        with self.lease(create=True) as fd:
            self._append(fd, data)

    def read(self, position: int, size: int) -> bytes:
        if size <= 0 or not self.exists:
            return b""
        with self.lease() as fd:
            return os.pread(fd, size, position)

    def truncate(self, size: int) -> None:
        with self.lease() as fd:
            os.ftruncate(fd, size)
        self.size = size

    def dup(self) -> int | None:
        """A descriptor of the caller's own (to fsync in another thread: eviction cannot close
        it); None if the file was never created."""
        if not self.exists:
            return None
        with self.lease() as fd:
            return os.dup(fd)

    def fsync(self) -> None:
        fd = self.dup()
        if fd is None:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Close the descriptor for good: a later use raises ``EBADF``, as a closed fd would."""
        self.closed = True
        FILES.forget(self)


class Segment:
    def __init__(self, base_offset: int, path: Path, size: int = 0, *, exists: bool) -> None:
        """``exists``: the file is on disk; if not, the first append creates it (or
        ``self.file.create()``)."""
        self.base_offset = base_offset
        self.path = path
        self.file = SegmentFile(base_offset, path, size, exists)
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
        return self.file.read(position, size)

    def scan(self, check_crc: bool,
             on_batch: Callable[[BatchHeader], None] | None = None) -> ScanResult:
        """Index every whole, valid batch from the start; stop at the first that is not."""
        if self.file.size == 0:
            return ScanResult(0, None)
        with self.file.lease() as fd:
            return self._scan(fd, check_crc, on_batch)

    def _scan(self, fd: int, check_crc: bool,
              on_batch: Callable[[BatchHeader], None] | None) -> ScanResult:
        size = self.file.size
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
