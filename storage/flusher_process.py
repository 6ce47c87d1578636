"""The fsync helper process (``python -m storage.flusher_process FD THREADS``): it fsyncs the
files the coordinator process asks it to, and answers each request when it is durable.

Run by :class:`storage.flusher.Flusher`, never by hand. ``FD`` is its end of a
``SOCK_SEQPACKET`` socket pair. The coordinator hands over each file once, as an open
descriptor (``SCM_RIGHTS``) under a file id of its choosing, and then asks for fsyncs by id; a
message (``ROUND``) carries the files it opens (ids, with their descriptors attached in the
same order), the requests (request id, file id) and the files it is done with (ids: each is
closed once its fsyncs under way ended). Each answer is the request id and the fsync's
``errno`` (0 when it succeeded), sent once the fsync returned. Up to ``THREADS`` fsyncs run at
once, so a file whose fsync stalls holds back only its own answers. The process exits when the
coordinator's end of the socket closes (the coordinator stopped or died).

It imports nothing but the standard library, so it starts in a few milliseconds.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

ROUND = struct.Struct("<HHH")
"""A message's head: how many files it opens, how many requests, how many files it closes."""
FILE = struct.Struct("<Q")
"""A file id (of a file opened or closed)."""
REQUEST = struct.Struct("<QQ")
"""A request: its id and the id of the file to fsync."""
ANSWER = struct.Struct("<Qi")
"""An answer: the request's id and the fsync's errno (0: durable)."""
MAX_FILES = 200
"""Files opened per message (the kernel passes at most 253 descriptors in one)."""
MAX_MESSAGE = ROUND.size + MAX_FILES * FILE.size + 4096 * REQUEST.size + 4096 * FILE.size


def encode_round(opened: list[int], requests: list[tuple[int, int]], closed: list[int]) -> bytes:
    return b"".join([ROUND.pack(len(opened), len(requests), len(closed)),
                     *(FILE.pack(f) for f in opened),
                     *(REQUEST.pack(r, f) for r, f in requests),
                     *(FILE.pack(f) for f in closed)])


def decode_round(data: bytes) -> tuple[list[int], list[tuple[int, int]], list[int]]:
    opens, requests, closes = ROUND.unpack_from(data)
    at = ROUND.size
    opened = [FILE.unpack_from(data, at + i * FILE.size)[0] for i in range(opens)]
    at += opens * FILE.size
    asked = [REQUEST.unpack_from(data, at + i * REQUEST.size) for i in range(requests)]
    at += requests * REQUEST.size
    closed = [FILE.unpack_from(data, at + i * FILE.size)[0] for i in range(closes)]
    return opened, [(r, f) for r, f in asked], closed


def fsync_errno(fd: int, sync: Callable[[int], None] = os.fsync,
                after: Callable[[], None] = lambda: None) -> int:
    """``sync(fd)``'s errno (0: it succeeded); ``after`` runs whatever happened."""
    try:
        sync(fd)
        return 0
    except OSError as exc:
        return exc.errno or errno.EIO
    finally:
        after()


class Files:
    """The descriptors handed over, by file id; one is closed once it is let go of and no
    fsync of it is under way (so an fsync never meets a descriptor reused for another file)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fds: dict[int, int] = {}
        self._busy: dict[int, int] = {}  # file id -> fsyncs under way
        self._let_go: set[int] = set()

    def open(self, file_id: int, fd: int) -> None:
        with self._lock:
            old = self._fds.pop(file_id, None)
            self._fds[file_id] = fd
        if old is not None:
            os.close(old)

    def take(self, file_id: int) -> int | None:
        """The file's descriptor for an fsync (``give_back`` it after), or None if unknown."""
        with self._lock:
            fd = self._fds.get(file_id)
            if fd is not None:
                self._busy[file_id] = self._busy.get(file_id, 0) + 1
            return fd

    def give_back(self, file_id: int) -> None:
        with self._lock:
            left = self._busy[file_id] - 1
            if left:
                self._busy[file_id] = left
                return
            del self._busy[file_id]
            fd = self._fds.pop(file_id) if file_id in self._let_go else None
            self._let_go.discard(file_id)
        if fd is not None:
            os.close(fd)

    def let_go(self, file_id: int) -> None:
        with self._lock:
            if file_id in self._busy:
                self._let_go.add(file_id)
                return
            fd = self._fds.pop(file_id, None)
        if fd is not None:
            os.close(fd)


def serve(sock: socket.socket, threads: int) -> None:
    """Answer requests until the other end closes."""
    sending = threading.Lock()
    files = Files()

    def answer(request_id: int, code: int) -> None:
        with sending:
            sock.send(ANSWER.pack(request_id, code))

    def sync(request_id: int, file_id: int, fd: int) -> None:
        answer(request_id, fsync_errno(fd, after=lambda: files.give_back(file_id)))

    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="fsync") as pool:
        while True:
            try:
                message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, MAX_FILES)
            except OSError:
                return
            if not message:
                return  # the coordinator closed its end
            opened, requests, closed = decode_round(message)
            for i, file_id in enumerate(opened):
                if i < len(fds):
                    files.open(file_id, fds[i])
            for extra in fds[len(opened):]:
                os.close(extra)
            for file_id in closed:  # (never one of this message's requests)
                files.let_go(file_id)
            for request_id, file_id in requests:
                fd = files.take(file_id)
                if fd is None:  # never handed over: answer it failed, never durable
                    answer(request_id, errno.EBADF)
                else:
                    pool.submit(sync, request_id, file_id, fd)


def main(argv: list[str]) -> int:
    fd, threads = int(argv[0]), int(argv[1])
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd) as sock:
        serve(sock, threads)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
