"""fsyncs for the event loop, done in a helper process so that they never wait for this
process's GIL.

An fsync run on a thread of this process has to take the GIL back after the system call, and
again to hand its result to the event loop; while the event loop is busy, each of those waits
up to the interpreter's switch interval (5 ms). Under a load of durable commits that wait, not
the disk, set the pace (a round of one partition took ~9 ms, of which the fsync ~2 ms). The
helper process (:mod:`storage.flusher_process`) runs the fsyncs on threads of its own; this
process only sends it the file's descriptor and reads the answer in an event-loop callback.

Each file is handed to the helper once, as an open descriptor (not a path: the fsyncs are of
exactly the file written, whatever renames happen meanwhile), then named by an id; a caller's
new file in a slot (a partition's new segment) lets the old one go. If the helper cannot be
started, or dies, the fsyncs run on threads of this process instead (logged): slower, never
less durable. A request the helper had not answered when it died is answered ``RETRY``, for
the caller to ask again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import structlog

from storage.flusher_process import ANSWER, MAX_FILES, encode_round, fsync_errno

log = structlog.get_logger("storage.flusher")

Done = Callable[[int], None]
"""Told the fsync's errno (0: the file is durable; ``RETRY``: not known, ask again), on the
event loop."""
RETRY = -1
MAX_REQUESTS = 4096
"""Requests per message to the helper."""

_HELPER = Path(__file__).with_name("flusher_process.py")


class Flusher:
    """fsyncs of open files, up to ``threads`` at once, each answered on the event loop."""

    def __init__(self, threads: int, *, use_process: bool = True) -> None:
        self.threads = max(1, threads)
        self._use_process = use_process
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sock: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, Done] = {}  # request id -> its callback
        self._slots: dict[int, tuple[tuple[int, int], int]] = {}  # slot -> (file, file id)
        self._threads: ThreadPoolExecutor | None = None

    @property
    def in_process(self) -> bool:
        """True when the fsyncs run on threads of this process (no helper, or it died)."""
        return self._sock is None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the helper process; it does not need to be up yet for :meth:`fsync`."""
        self._loop = loop
        if not self._use_process:
            return
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError as exc:  # a platform without SOCK_SEQPACKET Unix sockets
            log.error("fsync helper process cannot be reached; fsyncs run on threads",
                      error=str(exc))
            return
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_HELPER), str(theirs.fileno()),
                 str(self.threads)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                start_new_session=True)  # a Ctrl-C at the terminal is the coordinator's
        except OSError as exc:
            ours.close()
            log.error("fsync helper process could not start; fsyncs run on threads",
                      error=str(exc))
            return
        finally:
            theirs.close()
        ours.setblocking(False)
        self._sock = ours
        loop.add_reader(ours.fileno(), self._read_answers)

    def fsync(self, files: list[tuple[int, int, Done]]) -> None:
        """fsync each open file ``fd`` of ``files`` (``(slot, fd, done)``; the caller may
        close ``fd`` once this returns). ``slot`` names where the file sits (a partition): a
        new file in a slot lets the slot's old one go. Each ``done`` is called with its file's
        outcome on the event loop, never before this returns."""
        if not files:
            return
        if self._sock is None:
            for _, fd, done in files:
                self._in_thread(os.dup(fd), done)
            return
        opened: list[int] = []
        handed: list[int] = []
        closed: list[int] = []
        requests: list[tuple[int, int]] = []
        for slot, fd, done in files:
            stat = os.fstat(fd)
            file = (stat.st_dev, stat.st_ino)
            known = self._slots.get(slot)
            if known is None or known[0] != file:
                file_id = next(self._ids)
                self._slots[slot] = (file, file_id)
                opened.append(file_id)
                handed.append(fd)
                if known is not None:
                    closed.append(known[1])
            else:
                file_id = known[1]
            request_id = next(self._ids)
            self._pending[request_id] = done
            requests.append((request_id, file_id))
        try:
            # the files first (a message passes at most MAX_FILES descriptors), then the rest
            while len(opened) > MAX_FILES:
                socket.send_fds(self._sock, [encode_round(opened[:MAX_FILES], [], [])],
                                handed[:MAX_FILES])
                del opened[:MAX_FILES], handed[:MAX_FILES]
            for start in range(0, len(requests), MAX_REQUESTS):
                chunk = requests[start:start + MAX_REQUESTS]
                message = encode_round(opened, chunk, closed)
                if handed:
                    socket.send_fds(self._sock, [message], handed)
                else:
                    self._sock.send(message)
                opened, handed, closed = [], [], []
        except OSError as exc:  # the helper is gone, or its socket is full
            self._lose_helper(f"could not send to it: {exc}")

    def close(self) -> None:
        """Stop the helper (fsyncs not answered yet are dropped: call it when none matter)."""
        if self._sock is not None:
            if self._loop is not None:
                self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
        if self._process is not None:
            try:
                self._process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        self._pending.clear()
        if self._threads is not None:
            self._threads.shutdown(wait=False)

    # --- answers --------------------------------------------------------------------------
    def _read_answers(self) -> None:
        sock = self._sock
        assert sock is not None
        while True:
            try:
                data = sock.recv(ANSWER.size)
            except BlockingIOError:
                return
            except OSError as exc:
                self._lose_helper(f"read failed: {exc}")
                return
            if not data:
                self._lose_helper("it exited")
                return
            request_id, code = ANSWER.unpack(data)
            done = self._pending.pop(request_id, None)
            if done is not None:
                done(code)

    # --- without the helper ---------------------------------------------------------------
    def _lose_helper(self, reason: str) -> None:
        """Go on with threads of this process; what the helper had not answered is answered
        ``RETRY`` (its descriptors are the helper's, gone with it)."""
        sock, process = self._sock, self._process
        self._sock, self._process = None, None
        self._slots.clear()
        if sock is not None:
            if self._loop is not None:
                self._loop.remove_reader(sock.fileno())
            sock.close()
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=1.0)
        log.error("fsync helper process lost; fsyncs run on threads from now on",
                  reason=reason, unanswered=len(self._pending))
        unanswered, self._pending = self._pending, {}
        loop = self._loop
        assert loop is not None
        for done in unanswered.values():
            loop.call_soon(done, RETRY)

    def sync_file(self, fd: int) -> None:
        """The fsync of one file on a thread of this process (a test double may stall or
        fail it)."""
        os.fsync(fd)

    def _in_thread(self, fd: int, done: Done) -> None:
        """fsync ``fd`` (this one's own descriptor: closed after) on a thread."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.threads, thread_name_prefix="fsync")
        loop = self._loop
        assert loop is not None, "start() first"

        def sync() -> None:
            code = fsync_errno(fd, self.sync_file, after=lambda: os.close(fd))
            loop.call_soon_threadsafe(done, code)

        self._threads.submit(sync)
