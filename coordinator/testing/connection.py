"""One blocking connection to the server, for helpers that send a request and wait for its
answer (the client-side assignor's member, ``bench load``'s offset fetches): no pipelining, the
correlation id checked."""

from __future__ import annotations

import socket
import struct
from typing import Any

import protocol

_SIZE = struct.Struct(">i")


class Connection:
    """One blocking connection: a request, then its response."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._correlation = 0

    def _read(self, size: int) -> bytes:
        out = bytearray()
        while len(out) < size:
            chunk = self.sock.recv(size - len(out))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            out += chunk
        return bytes(out)

    def request(self, body: Any) -> Any:
        self._correlation += 1
        self.sock.sendall(protocol.encode_request(body, self._correlation, self.client_id))
        found = protocol.schema(int(body.__api_key__), int(body.__version__))
        (size,) = _SIZE.unpack(self._read(4))
        correlation, response = protocol.decode_response(found, self._read(size))
        if correlation != self._correlation:
            raise ConnectionError(f"correlation id {correlation}, not {self._correlation}")
        return response

    def close(self) -> None:
        self.sock.close()
