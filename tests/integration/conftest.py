"""Fixtures and a raw-socket Kafka client for the integration tests.

``WireClient`` speaks the wire protocol over a plain blocking socket: it sends request frames
built with our codec (or any bytes at all) and reads size-prefixed response frames, so tests can
check what the server does with exactly the bytes they choose.
"""

from __future__ import annotations

import functools
import importlib
import resource
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol
from tests.harness import ServerProcess

_SIZE = struct.Struct(">i")


def kio_class(api: str, version: int, kind: str, name: str) -> type[Any]:
    """``kio_class("metadata", 12, "request", "MetadataRequest")``."""
    module = importlib.import_module(f"kio.schema.{api}.v{version}.{kind}")
    return getattr(module, name)


class WireClient:
    """A blocking socket speaking Kafka frames to one server."""

    def __init__(self, bootstrap: str, timeout: float = 5.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self._next_id = 1

    # --- sending ---------------------------------------------------------------------------
    def next_correlation_id(self) -> int:
        cid = self._next_id
        self._next_id += 1
        return cid

    def send(self, body: Any, correlation_id: int | None = None,
             client_id: str | None = "wire-test") -> int:
        cid = self.next_correlation_id() if correlation_id is None else correlation_id
        self.sock.sendall(protocol.encode_request(body, cid, client_id))
        return cid

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    # --- receiving -------------------------------------------------------------------------
    def _read_exactly(self, size: int) -> bytes:
        chunks = []
        remaining = size
        while remaining:
            chunk = self.sock.recv(min(remaining, 1 << 20))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def recv_frame(self) -> bytes:
        """One response frame, without its size prefix."""
        (size,) = _SIZE.unpack(self._read_exactly(4))
        return self._read_exactly(size)

    def recv(self, api_key: int, version: int) -> tuple[int, Any]:
        """(correlation id, decoded body) of the next response."""
        return protocol.decode_response(protocol.schema(api_key, version), self.recv_frame())

    def request(self, body: Any) -> Any:
        """Send ``body`` and return the decoded response, checking the correlation id."""
        cid = self.send(body)
        got, response = self.recv(int(body.__api_key__), int(body.__version__))
        assert got == cid, f"correlation id {got}, expected {cid}"
        return response

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True once the server has closed this connection (EOF or reset) within ``timeout``;
        any bytes that arrive first are discarded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return False
            except OSError:
                return True
            finally:
                self.sock.settimeout(self.timeout)
            if not data:
                return True
        return False

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def api_versions_v0() -> Any:
    return protocol.make(kio_class("api_versions", 0, "request", "ApiVersionsRequest"))


def metadata_request(version: int, topics: list[str] | None = None,
                     allow_auto: bool = False) -> Any:
    request = kio_class("metadata", version, "request", "MetadataRequest")
    topic = kio_class("metadata", version, "request", "MetadataRequestTopic")
    entries = None if topics is None else tuple(protocol.make(topic, name=n) for n in topics)
    if version == 0 and entries is None:
        entries = ()
    return protocol.make(request, topics=entries, allow_auto_topic_creation=allow_auto)


def offset_fetch_request(group: str, topic: str, partitions: list[int],
                         require_stable: bool = False) -> Any:
    """OffsetFetch v8 for some partitions of one topic of one group."""
    return protocol.make(
        kio_class("offset_fetch", 8, "request", "OffsetFetchRequest"),
        groups=(protocol.make(
            kio_class("offset_fetch", 8, "request", "OffsetFetchRequestGroup"),
            group_id=group, topics=(protocol.make(
                kio_class("offset_fetch", 8, "request", "OffsetFetchRequestTopics"),
                name=topic, partition_indexes=tuple(partitions)),)),),
        require_stable=require_stable)


@pytest.fixture
def wire(shared_server: ServerProcess) -> Iterator[WireClient]:
    """A raw connection to the module's shared server."""
    client = WireClient(shared_server.bootstrap)
    try:
        yield client
    finally:
        client.close()


def start_limited_server(log_dir: Path, overrides: dict[str, str] | None = None,
                         address_space_gb: int = 4) -> ServerProcess:
    """A server whose address space is limited (``RLIMIT_AS``), as on a small laptop: a single
    allocation of many GB then fails there too, whatever the test machine's memory."""

    def limit() -> None:
        size = address_space_gb * 2**30
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    with pytest.MonkeyPatch.context() as patch:
        # only the harness starts a process while the patch is in place
        patch.setattr(subprocess, "Popen", functools.partial(subprocess.Popen, preexec_fn=limit))
        return ServerProcess(log_dir, overrides).start()
