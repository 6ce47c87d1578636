"""Segment files: naming, the crash-safe swap of cleaned segments, scanning, appending.

A segment is ``<base offset, 20 digits>.log``. Compaction writes ``<base>.log.cleaned`` and
commits it by renaming it to ``<base>.log.<end>.swap``, which replaces every segment whose base
offset is in ``[base, end)``; see :func:`plan_directory`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from storage.errors import LogFailedError
from storage.framing import BatchInfo, check_batch, find_valid_batch

SUFFIX = ".log"
CLEANED_SUFFIX = ".log.cleaned"
_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_SWAP_RE = re.compile(r"^(\d{20})\.log\.(\d{20})\.swap$")
_CLEANED_RE = re.compile(r"^(\d{20})\.log\.cleaned$")

# indirection so tests can simulate a disk that fills up in the middle of a write
_pwrite = os.pwrite


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SUFFIX}"


def cleaned_name(base_offset: int) -> str:
    return f"{base_offset:020d}{CLEANED_SUFFIX}"


def swap_name(base_offset: int, end_offset: int) -> str:
    return f"{base_offset:020d}{SUFFIX}.{end_offset:020d}.swap"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class DirectoryPlan:
    """The segments of a partition directory once leftovers of a compaction are resolved."""

    segments: dict[int, Path]  # base offset -> file (a .swap file stands in for its range)
    swaps: list[tuple[int, int, Path]] = field(default_factory=list)  # (base, end, path)
    stale: list[Path] = field(default_factory=list)  # .cleaned files of an unfinished compaction


def plan_directory(directory: Path) -> DirectoryPlan:
    segments: dict[int, Path] = {}
    swaps: list[tuple[int, int, Path]] = []
    stale: list[Path] = []
    for entry in directory.iterdir():
        if m := _SEGMENT_RE.match(entry.name):
            segments[int(m.group(1))] = entry
        elif m := _SWAP_RE.match(entry.name):
            swaps.append((int(m.group(1)), int(m.group(2)), entry))
        elif _CLEANED_RE.match(entry.name):
            stale.append(entry)
    for base, end, path in sorted(swaps):
        for old in [b for b in segments if base <= b < end]:
            del segments[old]
        segments[base] = path
    return DirectoryPlan(dict(sorted(segments.items())), sorted(swaps), stale)


def finish_plan(directory: Path, plan: DirectoryPlan) -> None:
    """Carry out a plan on disk: drop stale files, complete committed swaps (idempotent)."""
    changed = False
    for path in plan.stale:
        path.unlink(missing_ok=True)
        changed = True
    for base, end, swap_path in plan.swaps:
        for entry in list(directory.iterdir()):
            m = _SEGMENT_RE.match(entry.name)
            if m and base < int(m.group(1)) < end:
                entry.unlink(missing_ok=True)
        target = directory / segment_name(base)
        os.replace(swap_path, target)
        plan.segments[base] = target
        changed = True
    if changed:
        fsync_dir(directory)


@dataclass
class ScanResult:
    batches: list[BatchInfo]
    valid_end: int  # bytes up to here are whole, valid batches
    file_size: int
    error: str | None = None  # why the bytes after valid_end are not a batch
    more_valid_data: bool = False  # a valid batch exists after the bad bytes

    @property
    def last_offset(self) -> int | None:
        return self.batches[-1].last_offset if self.batches else None


def scan(buf: bytes, first_offset: int, start: int = 0) -> ScanResult:
    """Validate every batch of a segment's bytes (from byte ``start``, a batch boundary);
    offsets must start at >= ``first_offset``."""
    end = len(buf)
    pos = start
    batches: list[BatchInfo] = []
    expected = first_offset
    while pos < end:
        info = check_batch(buf, pos, end)
        if isinstance(info, str):
            more = find_valid_batch(buf, pos + 1, end) is not None
            return ScanResult(batches, pos, end, info, more)
        if info.base_offset < expected:
            reason = f"batch offset {info.base_offset} below expected {expected}"
            return ScanResult(batches, pos, end, reason, True)
        batches.append(info)
        expected = info.last_offset + 1
        pos += info.size
    return ScanResult(batches, pos, end)


class ActiveSegment:
    """The segment being appended to; writes go through :func:`os.pwrite` at the tracked end.

    With ``open_now=False`` no descriptor is opened (``fd`` is -1): a subclass that opens its
    file on demand passes the descriptor to :meth:`_append` itself (the topic logs do).
    """

    def __init__(self, base_offset: int, path: Path, size: int, *, open_now: bool = True) -> None:
        self.base_offset = base_offset
        self.path = path
        self.size = size
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644) if open_now else -1

    def append(self, data: bytes) -> None:
        """Write ``data`` at the end. On error the partial bytes are truncated away and the
        error propagates; if the truncate fails too, :class:`LogFailedError` is raised."""
        self._append(self.fd, data)

    def _append(self, fd: int, data: bytes) -> None:
        """:meth:`append` through ``fd``, an open descriptor of this segment's file."""
        self.write_at_end(fd, data)
        self.size += len(data)

    def write_at_end(self, fd: int, data: bytes) -> None:
        """Write ``data`` at :attr:`size` without moving :attr:`size` (the caller does, when it
        is ready to have readers see the bytes). Errors as :meth:`append`."""
        start = self.size
        view = memoryview(data)
        written = 0
        try:
            while written < len(data):
                n = _pwrite(fd, view[written:], start + written)
                if n <= 0:
                    raise OSError("pwrite wrote nothing")
                written += n
        except OSError as exc:
            try:
                os.ftruncate(fd, start)
            except OSError as trunc_exc:
                raise LogFailedError(
                    f"{self.path}: write failed ({exc}) and its partial bytes could not be "
                    f"truncated away ({trunc_exc}); reopen the log to recover"
                ) from exc
            raise

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fd, size)
        self.size = size

    def fsync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
