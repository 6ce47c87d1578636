"""``python -m coordinator bench heartbeats``: what a listener's security costs per request.

A closed loop over raw sockets: ``--connections`` clients, each a classic group's only member
(JoinGroup, SyncGroup), send Heartbeat v3 one after another for ``--seconds`` on a listener of
``--security-protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; the SASL ones log in first
with ``--sasl-mechanism``). The server runs in a child process; the certificates are a
throwaway CA's (trustme, from the dev extras). Prints heartbeats/s and their p50/p99 latency.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import ssl
import statistics
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

import scramp

import protocol
from coordinator.testing import ServerProcess, wait_until
from protocol import ErrorCode

from .storm_client import message

_SIZE = struct.Struct(">i")
API_VERSIONS = message("api_versions", 3, "ApiVersionsRequest")
HANDSHAKE = message("sasl_handshake", 1, "SaslHandshakeRequest")
AUTHENTICATE = message("sasl_authenticate", 2, "SaslAuthenticateRequest")
JOIN = message("join_group", 5, "JoinGroupRequest")
JOIN_PROTOCOL = message("join_group", 5, "JoinGroupRequestProtocol")
SYNC = message("sync_group", 3, "SyncGroupRequest")
SYNC_ASSIGNMENT = message("sync_group", 3, "SyncGroupRequestAssignment")
HEARTBEAT = message("heartbeat", 3, "HeartbeatRequest")
USER, PASSWORD = "bench", "bench-secret"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class Client:
    """One connection; one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.next_id = 1

    @classmethod
    async def connect(cls, port: int, context: ssl.SSLContext | None) -> Client:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1" if context else None)
        return cls(reader, writer)

    async def request(self, body: Any) -> Any:
        cid = self.next_id
        self.next_id += 1
        self.writer.write(protocol.encode_request(body, cid, "bench-heartbeats"))
        (size,) = _SIZE.unpack(await self.reader.readexactly(4))
        frame = await self.reader.readexactly(size)
        found = protocol.schema(int(body.__api_key__), int(body.__version__))
        got, response = protocol.decode_response(found, frame)
        assert got == cid
        return response

    async def login(self, mechanism: str) -> None:
        handshake = await self.request(protocol.make(HANDSHAKE, mechanism=mechanism))
        assert handshake.error_code == ErrorCode.none, handshake
        if mechanism == "PLAIN":
            tokens = [f"\0{USER}\0{PASSWORD}".encode()]
            answer = await self.request(protocol.make(AUTHENTICATE, auth_bytes=tokens[0]))
            assert answer.error_code == ErrorCode.none, answer
            return
        scram = scramp.ScramClient([mechanism], USER, PASSWORD)
        first = await self.request(protocol.make(
            AUTHENTICATE, auth_bytes=scram.get_client_first().encode()))
        assert first.error_code == ErrorCode.none, first
        scram.set_server_first(bytes(first.auth_bytes).decode())
        final = await self.request(protocol.make(
            AUTHENTICATE, auth_bytes=scram.get_client_final().encode()))
        assert final.error_code == ErrorCode.none, final
        scram.set_server_final(bytes(final.auth_bytes).decode())

    async def join(self, group: str) -> tuple[int, str]:
        def join(member_id: str) -> Any:
            timeout = datetime.timedelta(seconds=30)
            return protocol.make(JOIN, group_id=group, session_timeout=timeout,
                                 rebalance_timeout=timeout, member_id=member_id,
                                 group_instance_id=None, protocol_type="consumer",
                                 protocols=(protocol.make(JOIN_PROTOCOL, name="range",
                                                          metadata=b""),))

        joined = await self.request(join(""))
        if joined.error_code == ErrorCode.member_id_required:
            joined = await self.request(join(joined.member_id))
        assert joined.error_code == ErrorCode.none, joined
        synced = await self.request(protocol.make(
            SYNC, group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
            group_instance_id=None, assignments=(protocol.make(
                SYNC_ASSIGNMENT, member_id=joined.member_id, assignment=b""),)))
        assert synced.error_code == ErrorCode.none, synced
        return joined.generation_id, joined.member_id

    async def close(self) -> None:
        self.writer.close()


async def _member(port: int, context: ssl.SSLContext | None, mechanism: str | None,
                  group: str, ready: asyncio.Queue[str], start: asyncio.Event,
                  stop_at: list[float], latencies: list[float]) -> None:
    client = await Client.connect(port, context)
    try:
        await client.request(protocol.make(API_VERSIONS, client_software_name="bench",
                                           client_software_version="1"))
        if mechanism is not None:
            await client.login(mechanism)
        generation, member_id = await client.join(group)
        heartbeat = protocol.make(HEARTBEAT, group_id=group, generation_id=generation,
                                  member_id=member_id, group_instance_id=None)
        ready.put_nowait(group)
        await start.wait()
        while time.perf_counter() < stop_at[0]:
            started = time.perf_counter()
            answer = await client.request(heartbeat)
            latencies.append(time.perf_counter() - started)
            assert answer.error_code == ErrorCode.none, answer
    finally:
        await client.close()


async def _run_loop(port: int, context: ssl.SSLContext | None, mechanism: str | None,
                    connections: int, seconds: float, warmup: float) -> dict[str, Any]:
    ready: asyncio.Queue[str] = asyncio.Queue()
    start = asyncio.Event()
    stop_at = [float("inf")]
    latencies: list[float] = []
    members = [asyncio.create_task(_member(port, context, mechanism, f"bench-{i}", ready, start,
                                           stop_at, latencies))
               for i in range(connections)]
    for _ in range(connections):  # every member logged in and joined its group
        waiting = asyncio.ensure_future(ready.get())
        await asyncio.wait([waiting, *members], return_when=asyncio.FIRST_COMPLETED)
        failed = [m for m in members if m.done() and m.exception() is not None]
        if failed:
            waiting.cancel()
            for member in members:
                member.cancel()
            await asyncio.gather(*members, return_exceptions=True)
            raise failed[0].exception()  # type: ignore[misc]
    stop_at[0] = time.perf_counter() + warmup + seconds
    start.set()
    await asyncio.sleep(warmup)
    latencies.clear()
    counted_from = time.perf_counter()
    await asyncio.gather(*members)
    elapsed = time.perf_counter() - counted_from
    ordered = sorted(latencies)
    return {
        "heartbeats": len(ordered),
        "heartbeats_per_s": round(len(ordered) / elapsed),
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[int(len(ordered) * 0.99)] * 1000, 3),
    }


def _certificates(directory: Path) -> tuple[Path, Path]:
    try:
        import trustme
    except ImportError:  # pragma: no cover - the dev extras hold it
        raise SystemExit("bench heartbeats over TLS needs trustme (pip install -e '.[dev]')"
                         ) from None
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(directory / "server.pem"))
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    return directory / "server.pem", directory / "ca.pem"


def run_bench(security_protocol: str, mechanism: str, connections: int, seconds: float,
              warmup: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        overrides = {"listeners": f"{security_protocol}://127.0.0.1:0",
                     "group.initial.rebalance.delay.ms": "0"}
        extra: list[str] = []
        context = None
        if "SSL" in security_protocol:
            keystore, ca = _certificates(directory)
            overrides.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)})
            context = ssl.create_default_context(cafile=str(ca))
        uses_sasl = security_protocol.startswith("SASL")
        if uses_sasl:
            overrides["sasl.jaas.config"] = (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_{USER}="{PASSWORD}";')
            extra = ["--add-scram", f"{mechanism}=[name={USER},password={PASSWORD}]"] \
                if mechanism.startswith("SCRAM") else []
        with ServerProcess(directory / "data", overrides, extra_args=extra) as server:
            wait_until(lambda: server.event("coordinator partitions loaded"), 30,
                       message="the coordinator partitions to load")
            result = asyncio.run(_run_loop(server.port, context, mechanism if uses_sasl else None,
                                           connections, seconds, warmup))
    return {"case": "heartbeats", "security_protocol": security_protocol,
            "sasl_mechanism": mechanism if uses_sasl else None, "connections": connections,
            "seconds": seconds, **result}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--security-protocol", choices=PROTOCOLS, default="PLAINTEXT")
    parser.add_argument("--sasl-mechanism", default="SCRAM-SHA-512",
                        choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--json", action="store_true", help="one JSON line (the default)")


def run(args: argparse.Namespace) -> int:
    print(json.dumps(run_bench(args.security_protocol, args.sasl_mechanism, args.connections,
                               args.seconds, args.warmup)))
    return 0
