"""``bench heartbeats``' reference: a minimal uvloop server that answers every request frame
with one fixed, valid ConsumerGroupHeartbeat v1 answer (no error, the member's epoch, Kafka's
5 s interval, no assignment), its correlation id copied from the request.

It does what any asyncio server must do for this traffic (read, cut frames, write an answer
per frame) and nothing else, so the load generator's heartbeats/s against it are the limit
of Python asyncio on this machine; ``ratio_to_echo`` is the coordinator's share of it. It
runs in a process of its own, as the coordinator does.
"""

from __future__ import annotations

import asyncio
import datetime
import multiprocessing
import ssl
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection

import protocol

from .wire import message
from .wire import run as run_loop

RESPONSE = message("consumer_group_heartbeat", 1, "ConsumerGroupHeartbeatResponse", "response")
MEMBER_ID = "00000000-0000-4000-8000-000000000000"
EPOCH = 1
_SIZE = struct.Struct(">i")


def answer_template() -> bytes:
    """The fixed answer frame (size prefix included), correlation id 0 (bytes 4..8)."""
    body = protocol.make(RESPONSE, throttle_time=datetime.timedelta(0),
                         error_code=protocol.ErrorCode.none, error_message=None,
                         member_id=MEMBER_ID, member_epoch=EPOCH,
                         heartbeat_interval=datetime.timedelta(milliseconds=5000),
                         assignment=None)
    return protocol.encode_response(protocol.schema(68, 1), 0, body)


class EchoProtocol(asyncio.Protocol):
    """Cuts request frames out of the stream; one write of the answers per read."""

    def __init__(self, answer: bytes) -> None:
        self.head = answer[:4]
        self.tail = answer[8:]
        self.buffer = bytearray()
        self.transport: asyncio.WriteTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        head, tail = self.head, self.tail
        out: list[bytes | bytearray] = []
        start, end = 0, len(buffer)
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(buffer, start)
            if end - start < 4 + size:
                break
            # size(4) api_key(2) api_version(2) correlation_id(4)
            out += (head, buffer[start + 8:start + 12], tail)
            start += 4 + size
        if start:
            del buffer[:start]
        if out and self.transport is not None:
            self.transport.write(b"".join(out))


async def _serve(pipe: Connection, certificate: str | None) -> None:
    answer = answer_template()
    context = None
    if certificate is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certificate)
    server = await asyncio.get_running_loop().create_server(
        lambda: EchoProtocol(answer), "127.0.0.1", 0, ssl=context)
    pipe.send(server.sockets[0].getsockname()[1])
    await asyncio.to_thread(pipe.recv)  # "stop"
    server.close()


def _main(pipe: Connection, certificate: str | None) -> None:
    run_loop(_serve(pipe, certificate))


@contextmanager
def echo_server(certificate: str | None = None) -> Iterator[tuple[str, int]]:
    """The reference server in a child process: (bootstrap, its process id). With
    ``certificate`` (a PEM of the key and its chain) it speaks TLS, as the listener it is
    the reference of."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_main, args=(child, certificate), daemon=True)
    proc.start()
    try:
        if not parent.poll(60):
            raise RuntimeError("the echo server did not start")
        port = parent.recv()
        assert proc.pid is not None
        yield f"127.0.0.1:{port}", proc.pid
    finally:
        if proc.is_alive():
            parent.send("stop")
            proc.join(10)
        if proc.is_alive():
            proc.kill()
