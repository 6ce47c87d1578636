"""The asyncio TCP server: frames in, responses out, in request order, per connection.

Each connection has a reader (frames, size-checked against ``socket.request.max.bytes``) and a
writer (responses in request order). Requests may be pipelined: up to ``MAX_IN_FLIGHT`` are
handled at once, and a client that stops reading only stalls its own connection.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import struct
from typing import Final

import anyio

from coordinator.observability.logs import get_logger
from protocol import api_name, peek_fixed

from .dispatch import CloseConnection, Dispatcher

log = get_logger("coordinator.server")

_SIZE = struct.Struct(">i")
MAX_IN_FLIGHT = 64
CLOSE_GRACE_S = 10.0
TURN_REQUESTS = 2  # pipelined requests handled at once before other connections get a turn


class _End(enum.Enum):
    """The type of ``_END``, queued after a connection's last answer (an enum, so that mypy
    narrows ``item is _END``)."""

    END = enum.auto()


_END: Final = _End.END


class Connection:
    def __init__(self, server: KafkaServer, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, connection_id: str) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.id = connection_id
        self.pending: asyncio.Queue[bytes | asyncio.Future[bytes] | _End] = asyncio.Queue(
            MAX_IN_FLIGHT)
        self.reason = ""
        self._scope: anyio.CancelScope | None = None
        self._writing = False  # the writer holds an answer not yet on the wire

    async def run(self) -> None:
        log.debug("connection opened", connection=self.id)
        self.reason = "client closed the connection"
        try:
            async with anyio.create_task_group() as tasks:
                self._scope = tasks.cancel_scope
                tasks.start_soon(self._write_responses)
                try:
                    await self._read_requests()
                    await self._answer_then_close(tasks.cancel_scope)
                except CloseConnection as exc:
                    # Like Kafka, which answers each request before reading the next: what was
                    # read before the bad frame is still answered, then the connection closes.
                    self.reason = str(exc)
                    await self._answer_then_close(tasks.cancel_scope)
                except (ConnectionError, asyncio.IncompleteReadError):
                    self.reason = "connection reset"
                    tasks.cancel_scope.cancel()
                except TimeoutError:
                    self.reason = "idle for longer than connections.max.idle.ms"
                    tasks.cancel_scope.cancel()
        finally:
            self.writer.close()
            log.info("connection closed", connection=self.id, reason=self.reason)

    async def _answer_then_close(self, scope: anyio.CancelScope) -> None:
        """Let the writer send the answers still owed, for at most ``CLOSE_GRACE_S``."""
        scope.deadline = anyio.current_time() + CLOSE_GRACE_S
        await self.pending.put(_END)

    async def _read_requests(self) -> None:
        max_bytes = self.server.max_request_bytes
        idle_seconds = self.server.idle_ms / 1000.0
        dispatcher = self.server.dispatcher
        dispatched_in_turn = 0
        while True:
            try:
                async with asyncio.timeout(idle_seconds):
                    prefix = await self.reader.readexactly(4)
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    raise CloseConnection("connection closed inside a size prefix") from None
                return
            (size,) = _SIZE.unpack(prefix)
            if size < 0 or size > max_bytes:
                raise CloseConnection(
                    f"frame of {size} bytes is larger than socket.request.max.bytes ({max_bytes})"
                    if size > 0 else f"invalid frame size {size}"
                )
            try:
                frame = await self.reader.readexactly(size)
            except asyncio.IncompleteReadError:
                raise CloseConnection("connection closed inside a frame") from None
            try:
                response = dispatcher.dispatch(frame, self.id)
            except CloseConnection as exc:
                self._log_close(frame, str(exc))
                raise
            if not isinstance(response, bytes):
                await self.pending.put(asyncio.ensure_future(response))
            elif self._can_write_now():
                # Answered already and nothing owed before it: straight to the socket.
                if response:
                    self.writer.write(response)
            else:
                await self.pending.put(response)
            # Reading buffered frames never suspends this loop: a client pipelining many
            # requests is made to take turns with the other connections, so that the requests
            # of every connection that became readable meanwhile wait for at most a turn each.
            dispatched_in_turn += 1
            if dispatched_in_turn >= TURN_REQUESTS:
                dispatched_in_turn = 0
                await asyncio.sleep(0)

    def _can_write_now(self) -> bool:
        return (not self._writing and self.pending.empty()
                and self.writer.transport.get_write_buffer_size() == 0)

    def _log_close(self, frame: bytes, reason: str) -> None:
        fields: dict[str, object] = {"connection": self.id, "reason": reason}
        if len(frame) >= 8:
            api_key, api_version, _ = peek_fixed(frame)
            fields.update(api=api_name(api_key), version=api_version)
        fields["frame_head"] = frame[:64].hex()
        log.warning("closing connection: bad request", **fields)

    async def _write_responses(self) -> None:
        while True:
            self._writing = False
            item = await self.pending.get()
            self._writing = True
            if item is _END:
                return
            if isinstance(item, bytes):
                data = item
            else:
                try:
                    data = await item
                except CloseConnection as exc:
                    self.reason = str(exc)
                    log.warning("closing connection: request failed", connection=self.id,
                                reason=self.reason)
                    if self._scope is not None:
                        self._scope.cancel()
                    return
            if not data:  # NO_RESPONSE: nothing goes on the wire for this request
                continue
            try:
                self.writer.write(data)
                await self.writer.drain()
            except (ConnectionError, OSError) as exc:
                self.reason = f"socket error while writing: {exc}"
                if self._scope is not None:
                    self._scope.cancel()
                return


class KafkaServer:
    def __init__(self, dispatcher: Dispatcher, host: str, port: int, max_request_bytes: int,
                 idle_ms: int) -> None:
        self.dispatcher = dispatcher
        self.host = host
        self.port = port
        self.max_request_bytes = max_request_bytes
        self.idle_ms = idle_ms
        self._server: asyncio.Server | None = None
        self._ids = itertools.count()
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Bind and start accepting; returns the bound port."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port,
                                                  reuse_address=True, limit=2**20)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        connection = Connection(self, reader, writer, f"{where}-{next(self._ids)}")
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await connection.run()
        except Exception:  # never let one connection's failure reach the event loop
            log.exception("connection failed", connection=connection.id)
        finally:
            self._connections.discard(task)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()
