"""A connection's bytes as Kafka frames (a 4-byte big-endian size, then that many bytes), on
an ``asyncio.Protocol`` of its own rather than a ``StreamReader``.

``FrameStream`` keeps what was read in one buffer: the reader takes whole frames from it
(``next_size``, ``take``) and waits only when no whole frame is there, so a read of many
pipelined frames costs one wake-up, not two ``readexactly`` per frame. ``on_data`` (set by
the connection) runs after each read, before the reader is woken, to answer at once the
frames it can (``server.Connection._inline``). Flow control is a ``StreamReader``'s: reading
pauses while more than twice ``limit`` bytes wait, and resumes once the reader waits for
more or the buffer is down to ``limit``; writes wait in ``drain`` while the transport's
buffer is above its high-water mark.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

_SIZE = struct.Struct(">i")


class FrameStream(asyncio.Protocol):
    def __init__(self, limit: int = 2**20, over_ssl: bool = False) -> None:
        self.buffer = bytearray()
        self.limit = limit
        self.over_ssl = over_ssl
        self.transport: asyncio.Transport | None = None
        self.on_data: Callable[[], None] | None = None
        """Called after each read with the new bytes in ``buffer`` (before the reader wakes)."""
        self.eof = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._needed = 1  # what the waiting reader needs in the buffer to go on
        self._paused = False
        self.write_paused = False
        """The transport's write buffer is above its high-water mark (``drain`` waits)."""
        self._drain_waiter: asyncio.Future[None] | None = None
        self.lost = False

    # --- asyncio.Protocol --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.on_data is not None:
            self.on_data()
        if len(self.buffer) >= self._needed:
            self._wake()
        elif self._waiter is not None:
            return  # the reader waits for more (woken, it would only wait again): read on
        if (not self._paused and len(self.buffer) > 2 * self.limit
                and self.transport is not None):
            try:
                self.transport.pause_reading()
            except NotImplementedError:
                return
            self._paused = True

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        # as StreamReaderProtocol: keep the transport open to write the answers still owed,
        # except over TLS, which cannot be half closed
        return not self.over_ssl

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.eof = True
        if exc is not None:
            self.error = exc
        self._wake()
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionResetError("Connection lost"))

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- reading ---------------------------------------------------------------------------------
    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, needed: int = 1) -> None:
        """Until the buffer holds ``needed`` bytes or more, or the stream ends: the caller
        looks again."""
        if self.error is not None:
            raise self.error
        if self.eof:
            return
        if self._paused and self.transport is not None:  # the reader wants more: let it in
            self._paused = False
            self.transport.resume_reading()
        self._needed = needed
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None
            self._needed = 1
        if self.error is not None:
            raise self.error

    def consume(self, count: int) -> None:
        """Drop the first ``count`` bytes (frames taken)."""
        del self.buffer[:count]
        if self._paused and len(self.buffer) <= self.limit and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()

    async def next_size(self) -> int | None:
        """The size of the next frame once its prefix is in (the prefix stays in the buffer
        until ``take``); None if the stream ended between frames."""
        buffer = self.buffer
        while len(buffer) < 4:
            if self.error is not None:
                raise self.error
            if self.eof:
                if buffer:
                    raise asyncio.IncompleteReadError(bytes(buffer), 4)
                return None
            await self.wait(4)
        size: int = _SIZE.unpack_from(buffer)[0]
        return size

    async def take(self, size: int) -> bytes:
        """The next frame, of ``size`` bytes (``next_size``'s), once it is wholly in."""
        end = 4 + size
        buffer = self.buffer
        while len(buffer) < end:
            if self.error is not None:
                raise self.error
            if self.eof:
                raise asyncio.IncompleteReadError(bytes(buffer[4:]), size)
            await self.wait(end)
        frame = bytes(buffer[4:end])
        self.consume(end)
        return frame

    async def discard_until_eof(self) -> None:
        """Read and drop everything until the client closes."""
        while True:
            self.buffer.clear()
            if self.eof or self.error is not None:
                return
            await self.wait()

    # --- writing ---------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def is_closing(self) -> bool:
        return self.transport is None or self.transport.is_closing()

    def write_buffer_size(self) -> int:
        return 0 if self.transport is None else self.transport.get_write_buffer_size()

    async def drain(self) -> None:
        """Until the transport's write buffer is below its high-water mark."""
        if self.lost:
            raise ConnectionResetError("Connection lost")
        if self.transport is not None and self.transport.is_closing():
            await asyncio.sleep(0)  # let connection_lost run, as StreamWriter.drain does
            if self.lost:
                raise ConnectionResetError("Connection lost")
        if not self.write_paused:
            return
        waiter = self._drain_waiter = asyncio.get_running_loop().create_future()
        await waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def ssl_object(self) -> object | None:
        return None if self.transport is None else self.transport.get_extra_info("ssl_object")
