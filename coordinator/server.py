"""The asyncio TCP server: frames in, responses out, in request order, per connection.

One ``KafkaServer`` per listener. It accepts connections itself, so that the connection limits
work as Kafka's do (``coordinator/security/limits.py``: at ``max.connections`` it stops
accepting, over ``max.connections.per.ip`` it closes the new connection), and wraps them in TLS
on SSL and SASL_SSL listeners. On SASL listeners a connection first authenticates
(``coordinator/security/sasl.py``), one frame at a time; then, as on every listener, it has a
reader (frames, size-checked against ``socket.request.max.bytes``) and a writer (responses in
request order). Requests may be pipelined: up to ``MAX_IN_FLIGHT`` are handled at once, of at
most ``socket.request.max.bytes`` together (the next frame waits, as Kafka mutes a channel),
and a client that stops reading only stalls its own connection.

Bytes come in through a ``runtime.frames.FrameStream``. A request answered at once whose
handler says how to answer it again (``dispatch.Shortcut``: a steady member's heartbeat) is
remembered by its bytes without the correlation id; when the same bytes come again while the
reader waits and nothing is owed before them, the read's callback answers them from the
shortcut (``Connection._inline``), without waking the reader, decoding or dispatching.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import socket
import ssl
import struct
import time
from typing import Any, Final

import anyio

from coordinator.config.listeners import Listener
from coordinator.observability.logs import get_logger
from coordinator.observability.ratelimit import LogRateLimit
from coordinator.security.limits import ConnectionQuotas, TooManyConnections
from coordinator.security.listeners import ListenerSecurity
from coordinator.security.sasl import Step
from coordinator.security.tls import certificate_principal
from protocol import api_name, peek_fixed

from .dispatch import CloseConnection, Dispatcher, Shortcut
from .runtime.frames import FrameStream

log = get_logger("coordinator.server")
_CLOSE_LOG = LogRateLimit()
"""Bad-request lines, by API and version (``_log_close``)."""

_SIZE = struct.Struct(">i")
MAX_IN_FLIGHT = 64
CLOSE_GRACE_S = 10.0
AUTH_FAILURE_LINGER_S = 1.0
"""After a failed authentication's answer, how long the client may take to close first."""
TURN_REQUESTS = 8  # pipelined requests handled at once before other connections get a turn
TLS_HANDSHAKE_TIMEOUT_S = 30.0
ANONYMOUS = "User:ANONYMOUS"
INLINE_REQUESTS = 64
"""Requests answered from shortcuts in one read's callback at most (the others wait for the
reader, which takes turns with the other connections)."""
SHORTCUT_MAX_FRAME = 512
"""Longer requests get no shortcut (a steady heartbeat is some 60-100 bytes)."""
SHORTCUTS_KEPT = 10_000
"""Shortcuts a connection keeps at most (all are dropped when full: one per member it
carries)."""
_SIZE_API = struct.Struct(">iI")
"""A frame's size prefix, and its API key and version as one number (``Shortcut.api``)."""


class _End(enum.Enum):
    """The type of ``_END``, queued after a connection's last answer (an enum, so that mypy
    narrows ``item is _END``)."""

    END = enum.auto()


_END: Final = _End.END


class _FrameTooLarge(Exception):
    pass


class Connection:
    def __init__(self, server: KafkaServer, stream: FrameStream, connection_id: str,
                 principal: str = ANONYMOUS) -> None:
        self.server = server
        self.stream = stream
        self.id = connection_id
        self.principal = principal
        """``User:<name>`` once SASL authenticated it (or a client certificate's ``User:<DN>``
        on an SSL listener); ``User:ANONYMOUS`` otherwise."""
        self.pending: asyncio.Queue[bytes | asyncio.Future[bytes] | _End] = asyncio.Queue(
            MAX_IN_FLIGHT)
        self.reason = ""
        self._scope: anyio.CancelScope | None = None
        self._writing = False  # the writer holds an answer not yet on the wire
        self._out: list[bytes] = []  # answers of this turn of the loop, written as one
        self._last_read = 0.0  # when the last frame was read (loop time), for the idle check
        self._idle_check: asyncio.TimerHandle | None = None
        self._handling_bytes = 0  # size of the requests read whose handling is not over
        self._room = asyncio.Event()  # set when some of them finished
        self.shortcuts: dict[bytes, Shortcut] = {}
        """By a request's bytes after its API key, version and correlation id (``_keep``);
        the shortcut knows the API key and version (``Shortcut.api``)."""
        self._waiting = False  # the reader waits for the next frame's bytes (at a frame start)
        self._loop = asyncio.get_running_loop()

    async def run(self) -> None:
        log.debug("connection opened", connection=self.id, listener=self.server.listener.name)
        self.reason = "client closed the connection"
        try:
            if self.server.security.uses_sasl and not await self._authenticate():
                return
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
            self.stream.on_data = None
            if self._idle_check is not None:
                self._idle_check.cancel()
            self._flush()
            self.stream.close()
            log.info("connection closed", connection=self.id, reason=self.reason)

    # --- SASL, before any other request ---------------------------------------------------
    async def _authenticate(self) -> bool:
        """Run the SASL exchange; True once authenticated, False when the connection is to
        close (``self.reason`` says why)."""
        server = self.server
        authenticator = server.security.authenticator(self._answer_api_versions)
        while True:
            try:
                frame = await self._read_frame(server.sasl_max_receive_bytes,
                                               server.idle_ms / 1000.0)
            except _FrameTooLarge:
                step = Step(failed=True, reason="Failing SASL authentication due to invalid "
                            "receive size")
            except TimeoutError:
                self.reason = "idle for longer than connections.max.idle.ms"
                return False
            except (ConnectionError, OSError):
                self.reason = "connection reset"
                return False
            else:
                if frame is None:
                    self.reason = "client closed the connection during authentication"
                    return False
                try:
                    step = authenticator.receive(frame)
                except CloseConnection as exc:  # a malformed ApiVersions
                    self.reason = str(exc)
                    return False
            if step.failed:
                await self._fail_authentication(step, authenticator.mechanism)
                return False
            try:
                if step.response:
                    self.stream.write(step.response)
                    await self.stream.drain()
            except (ConnectionError, OSError) as exc:
                self.reason = f"socket error while writing: {exc}"
                return False
            if step.authenticated:
                self.principal = authenticator.principal
                log.info("authenticated", connection=self.id, listener=server.listener.name,
                         mechanism=authenticator.mechanism, principal=self.principal)
                return True

    def _answer_api_versions(self, frame: bytes) -> bytes:
        answer = self.server.dispatcher.dispatch(frame, self.id, ANONYMOUS,
                                                 self.server.listener.name)
        assert isinstance(answer, bytes), "ApiVersions is answered at once"
        return answer

    async def _fail_authentication(self, step: Step, mechanism: str) -> None:
        """Kafka's failed authentication: logged, then after
        ``connection.failed.authentication.delay.ms`` the answer (if any), then the close."""
        log.info("failed authentication", connection=self.id,
                 listener=self.server.listener.name, mechanism=mechanism or None,
                 reason=step.reason)
        self.reason = f"failed authentication: {step.reason}"
        try:
            await asyncio.sleep(self.server.failed_authentication_delay_ms / 1000.0)
            if step.response:
                self.stream.write(step.response)
                async with asyncio.timeout(CLOSE_GRACE_S):
                    await self.stream.drain()
                await self._linger_for_client_close()
        except (ConnectionError, OSError, TimeoutError):
            pass

    async def _linger_for_client_close(self) -> None:
        """Give the client ``AUTH_FAILURE_LINGER_S`` to read the failure answer and close first:
        a client that gets the answer and our close in one read may report a lost connection
        instead of the authentication error (kafka-python does)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(AUTH_FAILURE_LINGER_S):
                await self.stream.discard_until_eof()

    async def _read_frame(self, max_bytes: int, timeout_s: float) -> bytes | None:
        """One whole frame within ``timeout_s``; None if the client closed between frames."""
        async with asyncio.timeout(timeout_s):
            try:
                size = await self.stream.next_size()
            except asyncio.IncompleteReadError:
                raise ConnectionResetError("connection closed inside a size prefix") from None
            if size is None:
                return None
            if size < 0 or size > max_bytes:
                raise _FrameTooLarge(size)
            try:
                return await self.stream.take(size)
            except asyncio.IncompleteReadError:
                raise ConnectionResetError("connection closed inside a frame") from None

    # --- requests and their answers --------------------------------------------------------
    async def _answer_then_close(self, scope: anyio.CancelScope) -> None:
        """Let the writer send the answers still owed, for at most ``CLOSE_GRACE_S``."""
        if self._idle_check is not None:
            self._idle_check.cancel()
        scope.deadline = anyio.current_time() + CLOSE_GRACE_S
        await self.pending.put(_END)

    def _emit(self, data: bytes) -> None:
        """Write ``data`` once this turn of the event loop is over, with the other answers of
        the turn: one system call for every answer a read of pipelined requests produced."""
        out = self._out
        out.append(data)
        if len(out) == 1:
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        out, self._out = self._out, []
        if out and not self.stream.is_closing():
            self.stream.write(out[0] if len(out) == 1 else b"".join(out))

    def _watch_idle(self, idle_s: float, scope: anyio.CancelScope) -> None:
        """One deadline per connection instead of a timeout per read: the check runs when the
        connection could first have been idle for ``idle_s``, and again as long as frames keep
        coming; it closes a connection whose last frame is older than that."""
        loop = asyncio.get_running_loop()
        idle_for = loop.time() - self._last_read
        if idle_for >= idle_s:
            self.reason = "idle for longer than connections.max.idle.ms"
            scope.cancel()
            return
        self._idle_check = loop.call_later(idle_s - idle_for, self._watch_idle, idle_s, scope)

    async def _read_requests(self) -> None:
        max_bytes = self.server.max_request_bytes
        idle_seconds = self.server.idle_ms / 1000.0
        dispatcher = self.server.dispatcher
        principal, listener = self.principal, self.server.listener.name
        dispatched_in_turn = 0
        loop = asyncio.get_running_loop()
        self._last_read = loop.time()
        if self._scope is not None:
            self._idle_check = loop.call_later(idle_seconds, self._watch_idle, idle_seconds,
                                               self._scope)
        stream = self.stream
        buffer = stream.buffer
        stream.on_data = self._inline
        while True:
            if len(buffer) >= 4 and self.shortcuts and self._answer_shortcuts():
                # frames read while this loop was busy (a backlog): answered as a read's
                # callback would, then the other connections get their turn
                dispatched_in_turn = 0
                await asyncio.sleep(0)
                continue
            if len(buffer) >= 4:
                (size,) = _SIZE.unpack_from(buffer)
            else:
                self._waiting = True
                try:
                    found = await stream.next_size()
                except asyncio.IncompleteReadError:
                    raise CloseConnection("connection closed inside a size prefix") from None
                finally:
                    self._waiting = False
                if found is None:
                    return
                size = found
            if size < 0 or size > max_bytes:
                raise CloseConnection(
                    f"frame of {size} bytes is larger than socket.request.max.bytes ({max_bytes})"
                    if size > 0 else f"invalid frame size {size}"
                )
            if self._handling_bytes and self._handling_bytes + size > max_bytes:
                await self._wait_for_room(size, max_bytes)
            if len(buffer) >= 4 + size:
                frame = bytes(buffer[4:4 + size])
                stream.consume(4 + size)
            else:
                try:
                    frame = await stream.take(size)
                except asyncio.IncompleteReadError:
                    raise CloseConnection("connection closed inside a frame") from None
            self._last_read = loop.time()
            try:
                response = dispatcher.dispatch(frame, self.id, principal, listener)
            except CloseConnection as exc:
                self._log_close(frame, str(exc))
                raise
            if not isinstance(response, bytes):
                await self.pending.put(self._handling(asyncio.ensure_future(response), size))
            else:
                shortcut = dispatcher.shortcut
                if shortcut is not None and size <= SHORTCUT_MAX_FRAME:
                    self._keep(frame, shortcut)
                if self._can_write_now():
                    # Answered already and nothing owed before it: out with this turn's answers.
                    if response:
                        self._emit(response)
                else:
                    await self.pending.put(response)
            # Reading buffered frames never suspends this loop: a client pipelining many
            # requests is made to take turns with the other connections, so that the requests
            # of every connection that became readable meanwhile wait for at most a turn each.
            dispatched_in_turn += 1
            if dispatched_in_turn >= TURN_REQUESTS:
                dispatched_in_turn = 0
                await asyncio.sleep(0)

    def _keep(self, frame: bytes, shortcut: Shortcut) -> None:
        shortcuts = self.shortcuts
        if len(shortcuts) >= SHORTCUTS_KEPT:
            shortcuts.clear()
        shortcuts[frame[8:]] = shortcut  # what follows the API key, version and correlation id

    def _inline(self) -> None:
        """After a read, while the reader waits at a frame's start: ``_answer_shortcuts``."""
        if self._waiting and self.shortcuts:
            self._answer_shortcuts()

    def _answer_shortcuts(self) -> int:
        """With the buffer at a frame's start and no answer owed (none queued, the
        transport's buffer below its high-water mark): answer the whole frames at the front of
        the buffer that have shortcuts, up to the first that has none or that its shortcut
        cannot answer (the reader takes it from there), at most ``INLINE_REQUESTS`` of them;
        their answers go out in one write. How many were answered."""
        # answers still in the transport's buffer went before (only a full one holds these)
        if self._writing or not self.pending.empty() or self.stream.write_paused:
            return 0
        dispatcher = self.server.dispatcher
        if dispatcher.faults_armed():
            return 0
        started = time.perf_counter()
        now_ms = dispatcher.now_ms()
        shortcut_of = self.shortcuts.get
        size_api = _SIZE_API.unpack_from
        buffer = self.stream.buffer
        start, end = 0, len(buffer)
        out: list[bytes | bytearray] = []
        answered = 0
        while end - start >= 12 and answered < INLINE_REQUESTS:
            size, api = size_api(buffer, start)
            stop = start + 4 + size
            if stop > end or size > SHORTCUT_MAX_FRAME or size < 8:
                break
            shortcut = shortcut_of(bytes(buffer[start + 12:stop]))
            if shortcut is None or shortcut.api != api:
                break
            body = shortcut.again(now_ms)
            if body is None:
                break
            if body is not shortcut.body:
                shortcut.take(body)
            out += (shortcut.head, buffer[start + 8:start + 12], shortcut.tail)
            start = stop
            answered += 1
        if not answered:
            return 0
        self.stream.consume(start)
        self._last_read = self._loop.time()
        data = b"".join(out)
        if self._out:
            self._emit(data)
        else:
            self.stream.write(data)
        dispatcher.ran_now(answered, (time.perf_counter() - started) * 1000.0)
        return answered

    def _handling(self, future: asyncio.Future[bytes], size: int) -> asyncio.Future[bytes]:
        """Count the request's bytes until its handling is over (its answer is built)."""
        self._handling_bytes += size

        def done(_: asyncio.Future[bytes]) -> None:
            self._handling_bytes -= size
            self._room.set()

        future.add_done_callback(done)
        return future

    async def _wait_for_room(self, size: int, max_bytes: int) -> None:
        """Hold the next frame, as Kafka mutes a channel, until the connection's requests still
        being handled and this one add up to at most ``socket.request.max.bytes`` (a frame
        alone is never larger), so no connection makes the server hold more of its requests."""
        while self._handling_bytes and self._handling_bytes + size > max_bytes:
            self._room.clear()
            await self._room.wait()

    def _can_write_now(self) -> bool:
        return (not self._writing and self.pending.empty()
                and self.stream.write_buffer_size() == 0)

    def _log_close(self, frame: bytes, reason: str) -> None:
        """One line per API and version every 10 s at most (a client retrying a request we
        close on would write thousands), with the count of those left out."""
        key: tuple[int, int] | None = None
        fields: dict[str, object] = {"connection": self.id, "reason": reason}
        if len(frame) >= 8:
            api_key, api_version, _ = peek_fixed(frame)
            key = (api_key, api_version)
            fields.update(api=api_name(api_key), version=api_version)
        suppressed = _CLOSE_LOG.allow(key)
        if suppressed is None:
            return
        if suppressed:
            fields["suppressed"] = suppressed
        fields["frame_head"] = frame[:64].hex()
        log.warning("closing connection: bad request", **fields)

    async def _write_responses(self) -> None:
        while True:
            self._writing = False
            item = await self.pending.get()
            self._writing = True
            if item is _END:
                self._flush()
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
                self._emit(data)
                if self.pending.empty():  # nothing else to answer now: make room first
                    self._flush()
                    await self.stream.drain()
            except (ConnectionError, OSError) as exc:
                self.reason = f"socket error while writing: {exc}"
                if self._scope is not None:
                    self._scope.cancel()
                return


class KafkaServer:
    """One listener: its sockets, its security, and the connections it accepted."""

    def __init__(self, dispatcher: Dispatcher, listener: Listener, max_request_bytes: int,
                 idle_ms: int, security: ListenerSecurity | None = None,
                 quotas: ConnectionQuotas | None = None,
                 failed_authentication_delay_ms: int = 100,
                 sasl_max_receive_bytes: int = 524288) -> None:
        self.dispatcher = dispatcher
        self.listener = listener
        self.host = listener.host
        self.port = listener.port
        self.max_request_bytes = max_request_bytes
        self.idle_ms = idle_ms
        self.security = security or ListenerSecurity(listener)
        self.quotas = quotas or ConnectionQuotas(2**31 - 1, 2**31 - 1, {}, {})
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
        self.sasl_max_receive_bytes = sasl_max_receive_bytes
        self._sockets: list[socket.socket] = []
        self._acceptors: list[asyncio.Task[None]] = []
        self._ids = itertools.count()
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Bind and start accepting; returns the bound port."""
        self._sockets = _bind(self.host, self.port)
        self.port = self._sockets[0].getsockname()[1]
        for sock in self._sockets:
            self._acceptors.append(asyncio.create_task(self._accept_loop(sock)))
        return self.port

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        name = self.listener.name
        while True:
            try:
                conn, address = await loop.sock_accept(sock)
            except OSError as exc:  # e.g. out of file descriptors: try again shortly
                log.warning("accept failed", listener=name, error=str(exc))
                await asyncio.sleep(0.1)
                continue
            # Kafka's acceptor blocks here while max.connections (broker or listener) is
            # reached; the connections behind this one wait in the backlog
            await self.quotas.wait_for_slot(name)
            host = str(address[0])
            try:
                self.quotas.inc(name, host)
            except TooManyConnections as exc:
                log.info("rejected connection", listener=name, address=host, reason=str(exc))
                conn.close()
                continue
            task = asyncio.create_task(self._serve(conn, address))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def _serve(self, conn: socket.socket, address: Any) -> None:
        name, host = self.listener.name, str(address[0])
        where = f"{host}:{address[1]}"
        connection_id = f"{where}-{next(self._ids)}"
        try:
            stream = await self._open(conn, connection_id)
            if stream is None:
                return
            principal = ANONYMOUS
            if self.listener.security_protocol == "SSL":
                ssl_object: Any = stream.ssl_object()
                peer = ssl_object.getpeercert() if ssl_object is not None else None
                principal = certificate_principal(peer) or ANONYMOUS
                if principal != ANONYMOUS:
                    log.info("authenticated", connection=connection_id, listener=name,
                             mechanism="SSL", principal=principal)
            connection = Connection(self, stream, connection_id, principal)
            try:
                await connection.run()
            except Exception:  # never let one connection's failure reach the event loop
                log.exception("connection failed", connection=connection.id)
        finally:
            self.quotas.dec(name, host)

    async def _open(self, conn: socket.socket, connection_id: str) -> FrameStream | None:
        """The frames of the accepted socket, after the TLS handshake on a TLS listener."""
        loop = asyncio.get_running_loop()
        context = self.security.ssl_context
        protocol = FrameStream(limit=2**20, over_ssl=context is not None)
        try:
            if context is None:
                await loop.connect_accepted_socket(lambda: protocol, conn)
            else:
                await loop.connect_accepted_socket(
                    lambda: protocol, conn, ssl=context,
                    ssl_handshake_timeout=min(TLS_HANDSHAKE_TIMEOUT_S, self.idle_ms / 1000.0))
        except (ssl.SSLError, ConnectionError, OSError, TimeoutError) as exc:
            conn.close()
            if context is not None:
                log.info("failed authentication", connection=connection_id,
                         listener=self.listener.name, reason=f"SSL handshake failed: {exc}")
            return None
        return protocol

    async def stop(self) -> None:
        for acceptor in self._acceptors:
            acceptor.cancel()
        await asyncio.gather(*self._acceptors, return_exceptions=True)
        for sock in self._sockets:
            sock.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)


def _bind(host: str, port: int, backlog: int = 128) -> list[socket.socket]:
    """Listening sockets for ``host:port``: every address the host resolves to (an empty host
    is every interface), all on one port (the first's, when ``port`` is 0)."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    seen: set[tuple[int, str]] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, str(address[0])) in seen:
                continue
            seen.add((family, str(address[0])))
            sock = socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                bound_port = sockets[0].getsockname()[1] if sockets else port
                sock.bind((address[0], bound_port, *address[2:]))
                sock.listen(backlog)
                sock.setblocking(False)
            except OSError:
                sock.close()
                if not sockets:
                    raise
                continue  # another family of the same host (IPv6 where it is off)
            sockets.append(sock)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets
