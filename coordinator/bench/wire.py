"""The benches' frame I/O: one asyncio protocol that cuts a connection's byte stream into
response frames, stamped with the time they arrived, and the request/response client on it.

Every bench that speaks raw frames (storm, heartbeats, commits) uses this module: ``Wire`` for
one request at a time (set-up, admin, decoded answers), and ``FrameProtocol.sink`` for load
loops that pipeline pre-encoded frames and read only the bytes they need of each answer.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import ssl
import struct
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import protocol

T = TypeVar("T")
SIZE = struct.Struct(">i")
FrameSink = Callable[[list[bytes], float], None]
"""Told of the frames one read delivered and the time they arrived."""


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on uvloop where it is installed, as the server runs
    (``coordinator.runtime.loop``, not imported here: a load generator process starts
    without the server's modules)."""
    factory = None
    if os.environ.get("COORDINATOR_EVENT_LOOP", "").lower() != "asyncio":
        try:
            import uvloop

            factory = uvloop.new_event_loop
        except ImportError:  # pragma: no cover - uvloop is a dependency on Linux and macOS
            pass
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def message(api: str, version: int, name: str, kind: str = "request") -> type[Any]:
    """A kio message class: ``message("heartbeat", 3, "HeartbeatRequest")``."""
    return getattr(importlib.import_module(f"kio.schema.{api}.v{version}.{kind}"), name)


def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    """An encoded request frame (size prefix included) with another correlation id."""
    return frame[:8] + SIZE.pack(correlation_id) + frame[12:]


class FrameProtocol(asyncio.Protocol):
    """Cuts the byte stream into response frames and stamps each with the time it arrived
    (in ``data_received``, before anything else runs), so a busy load generator does not add
    its own delays to the latency it measures. With a ``sink`` set, frames go to it as they
    arrive instead of the queue ``next_frame`` reads."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.frames: deque[tuple[bytes, float]] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.closed: BaseException | None = None
        self.sink: FrameSink | None = None

    def data_received(self, data: bytes) -> None:
        arrived = time.perf_counter()
        buffer = self.buffer
        buffer += data
        cut: list[bytes] = []
        start, end = 0, len(buffer)
        while end - start >= 4:
            (size,) = SIZE.unpack_from(buffer, start)
            if end - start < 4 + size:
                break
            cut.append(bytes(buffer[start + 4:start + 4 + size]))
            start += 4 + size
        if start:
            del buffer[:start]
        if not cut:
            return
        if self.sink is not None:
            self.sink(cut, arrived)
            return
        self.frames.extend((frame, arrived) for frame in cut)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.closed = exc or ConnectionResetError("connection closed")
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(self.closed)

    async def next_frame(self) -> tuple[bytes, float]:
        while not self.frames:
            if self.closed is not None:
                raise self.closed
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        return self.frames.popleft()


class Wire:
    """One connection; requests on it go one at a time (a lock), so a response time is the
    server's, not queueing behind this connection's other requests."""

    def __init__(self, transport: asyncio.Transport, frames: FrameProtocol,
                 client_id: str = "bench") -> None:
        self.transport = transport
        self.frames = frames
        self.client_id = client_id
        self.lock = asyncio.Lock()
        self.next_id = 1

    @classmethod
    async def connect(cls, bootstrap: str, context: ssl.SSLContext | None = None,
                      client_id: str = "bench") -> Wire:
        host, port = bootstrap.rsplit(":", 1)
        transport, frames = await asyncio.get_running_loop().create_connection(
            FrameProtocol, host, int(port), ssl=context,
            server_hostname=host if context is not None else None)
        return cls(transport, frames, client_id)

    async def request(self, body: Any, frame: bytes | None = None) -> tuple[Any, float]:
        """(response, seconds from sending to the response's arrival). ``frame``: the request
        already encoded (any correlation id; it is replaced)."""
        async with self.lock:
            if self.frames.closed is not None:
                raise self.frames.closed
            cid = self.next_id
            self.next_id += 1
            if frame is None:
                frame = protocol.encode_request(body, cid, self.client_id)
            else:
                frame = with_correlation_id(frame, cid)
            started = time.perf_counter()
            self.transport.write(frame)
            data, arrived = await self.frames.next_frame()
        schema = protocol.schema(int(body.__api_key__), int(body.__version__))
        got, response = protocol.decode_response(schema, data)
        assert got == cid, f"correlation id {got}, expected {cid}"
        return response, arrived - started

    async def close(self) -> None:
        self.transport.close()
