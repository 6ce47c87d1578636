"""How the server treats frames on the wire: pipelining, sizes, unknown APIs and versions, junk.

Every test here talks to a real ``python -m coordinator serve`` over plain sockets, and checks
that whatever one connection does, the server stays up and other connections keep working.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import protocol
from protocol import ApiKey, ErrorCode
from protocol.legacy import LEGACY_APIS
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import (
    WireClient,
    api_versions_v0,
    kio_class,
    metadata_request,
    start_limited_server,
)

MAX_BYTES = 4096
SERVED = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.METADATA: (0, 13),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
}
"""With the versions Kafka 4.0 removed (``protocol/legacy.py``), served by default."""


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """This module's server has a small ``socket.request.max.bytes`` to test the limit."""
    process = ServerProcess(tmp_path_factory.mktemp("wire") / "data",
                            {"socket.request.max.bytes": str(MAX_BYTES)}).start()
    try:
        yield process
    finally:
        process.stop()
        process.kill()


def assert_healthy(server: ServerProcess) -> None:
    """The process is up and a fresh connection gets ApiVersions and Metadata answers."""
    assert server.alive(), server.output()[-4000:]
    with WireClient(server.bootstrap) as other:
        versions = other.request(api_versions_v0())
        assert versions.error_code == ErrorCode.none
        metadata = other.request(metadata_request(1, None))
        assert [b.node_id for b in metadata.brokers] == [1]


def header(api_key: int, version: int, correlation_id: int, client_id: bytes | None = b"t"
           ) -> bytes:
    out = struct.pack(">hhi", api_key, version, correlation_id)
    if client_id is None:
        return out + struct.pack(">h", -1)
    return out + struct.pack(">h", len(client_id)) + client_id


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


# --- pipelining -------------------------------------------------------------------------------
def _mixed_requests() -> list[Any]:
    find_v0 = kio_class("find_coordinator", 0, "request", "FindCoordinatorRequest")
    find_v4 = kio_class("find_coordinator", 4, "request", "FindCoordinatorRequest")
    cluster = kio_class("describe_cluster", 1, "request", "DescribeClusterRequest")
    configs = kio_class("describe_configs", 4, "request", "DescribeConfigsRequest")
    resource = kio_class("describe_configs", 4, "request", "DescribeConfigsResource")
    return [
        api_versions_v0(),
        metadata_request(12, None),
        protocol.make(find_v0, key="g"),
        protocol.make(find_v4, key_type=0, coordinator_keys=("a", "b")),
        protocol.make(cluster),
        protocol.make(configs, resources=(protocol.make(resource, resource_type=4,
                                                        resource_name="1",
                                                        configuration_keys=None),)),
        metadata_request(1, ["pipelined-topic"], allow_auto=True),
    ]


def test_pipelined_requests_are_answered_in_request_order(wire: WireClient) -> None:
    requests = _mixed_requests() * 15
    payload = b"".join(protocol.encode_request(body, 1000 + i, "pipeliner")
                       for i, body in enumerate(requests))
    wire.send_raw(payload)  # every request before reading any answer
    for i, body in enumerate(requests):
        cid, response = wire.recv(int(body.__api_key__), int(body.__version__))
        assert cid == 1000 + i
        assert type(response).__name__ == type(body).__name__.replace("Request", "Response")


def test_pipelined_requests_split_across_many_tiny_writes(wire: WireClient) -> None:
    data = b"".join(protocol.encode_request(metadata_request(9, None), 50 + i) for i in range(5))
    for i in range(len(data)):
        wire.send_raw(data[i : i + 1])
    assert [wire.recv(3, 9)[0] for _ in range(5)] == [50, 51, 52, 53, 54]


def test_client_that_never_reads_does_not_stall_others(shared_server: ServerProcess) -> None:
    hog = WireClient(shared_server.bootstrap)
    try:
        one = protocol.encode_request(metadata_request(12, None), 7)
        hog.sock.setblocking(False)
        sent = 0
        try:  # fill the server's and the kernel's buffers until our sends would block
            for _ in range(20000):
                sent += hog.sock.send(one * 64)
        except BlockingIOError:
            pass
        assert sent > 0
        assert_healthy(shared_server)
    finally:
        hog.close()
    assert_healthy(shared_server)


# --- sizes ------------------------------------------------------------------------------------
def test_frame_of_exactly_the_limit_is_accepted(wire: WireClient) -> None:
    request = protocol.encode_request(metadata_request(4, None), 31)[4:]
    # Bytes after the body are ignored (as Kafka does), so pad up to the limit.
    wire.send_raw(framed(request + b"\x00" * (MAX_BYTES - len(request))))
    cid, response = wire.recv(3, 4)
    assert cid == 31 and response.brokers[0].node_id == 1


def test_oversized_frame_closes_that_connection_only(shared_server: ServerProcess) -> None:
    bystander = WireClient(shared_server.bootstrap)
    try:
        bystander.request(api_versions_v0())
        with WireClient(shared_server.bootstrap) as offender:
            offender.send_raw(struct.pack(">i", MAX_BYTES + 1) + b"\x00" * 64)
            assert offender.is_closed()
        # the connection that was already open still works, and so does a new one
        assert bystander.request(metadata_request(1, None)).brokers[0].node_id == 1
        shared_server.wait_event("connection closed", reason=(
            f"frame of {MAX_BYTES + 1} bytes is larger than socket.request.max.bytes "
            f"({MAX_BYTES})"))
        assert_healthy(shared_server)
    finally:
        bystander.close()


@pytest.mark.parametrize("size", [2**31 - 1, 104857601, -1, -(2**31)])
def test_absurd_and_negative_sizes_close_the_connection(shared_server: ServerProcess,
                                                        size: int) -> None:
    with WireClient(shared_server.bootstrap) as offender:
        offender.send_raw(struct.pack(">i", size))
        assert offender.is_closed()
    assert_healthy(shared_server)


# --- unknown APIs and versions ----------------------------------------------------------------
@pytest.mark.parametrize("api_key", [-1, -32768, 999, 32767])
def test_unknown_api_key_closes_the_connection(shared_server: ServerProcess,
                                               api_key: int) -> None:
    with WireClient(shared_server.bootstrap) as client:
        client.request(api_versions_v0())
        client.send_raw(framed(header(api_key, 0, 5) + b"\x00" * 16))
        assert client.is_closed()
    assert_healthy(shared_server)


def test_api_versions_answer_advertises_the_served_ranges(wire: WireClient) -> None:
    response = wire.request(api_versions_v0())
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    # this APIs, at these ranges; later issues add theirs to the same table
    assert {k: ranges.get(int(k)) for k in SERVED} == SERVED
    for api_key, (low, high) in ranges.items():  # only what the codecs can really serve
        legacy = LEGACY_APIS.get(api_key)
        oldest = low if legacy is None else legacy.base
        assert oldest in protocol.known_versions(api_key)
        assert high in protocol.known_versions(api_key)


@pytest.mark.parametrize("version", [5, 6, 42, 32767])
def test_api_versions_of_an_unknown_version_gets_v0_format_error_35(wire: WireClient,
                                                                   version: int) -> None:
    # A future ApiVersions request: flexible header, a body we cannot know; Kafka answers it
    # in the v0 format with UNSUPPORTED_VERSION and its ranges, so the client can retry.
    wire.send_raw(framed(header(18, version, 4242) + b"\x00" + b"\x07future\x02\x01\x00"))
    cid, response = wire.recv(18, 0)
    assert cid == 4242
    assert response.error_code == ErrorCode.unsupported_version
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges[18] == (0, 4) and ranges[3] == (0, 13)
    # ... and the connection stays usable, as kafka-python retries on it with v3
    retry = kio_class("api_versions", 3, "request", "ApiVersionsRequest")
    answer = wire.request(protocol.make(retry, client_software_name="kafka-python",
                                        client_software_version="3.0.12"))
    assert answer.error_code == ErrorCode.none and answer.api_keys


def test_api_versions_v0_aiokafka_style(wire: WireClient) -> None:
    # aiokafka: header v1 with a client id, empty v0 body, response header v0.
    wire.send_raw(framed(header(18, 0, 9, b"aiokafka-0.14.0")))
    cid, response = wire.recv(18, 0)
    assert cid == 9 and response.error_code == ErrorCode.none
    assert {k.api_key for k in response.api_keys} >= {int(k) for k in SERVED}
    # ... followed on the same connection by Metadata v5, as aiokafka does
    answer = wire.request(metadata_request(5, None))
    assert answer.controller_id == 1


def test_api_versions_v0_with_null_client_id(wire: WireClient) -> None:
    wire.send_raw(framed(header(18, 0, 10, None)))
    cid, response = wire.recv(18, 0)
    assert cid == 10 and response.error_code == ErrorCode.none


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_v3_rejects_bad_software_name(wire: WireClient, version: int) -> None:
    request = kio_class("api_versions", version, "request", "ApiVersionsRequest")
    response = wire.request(protocol.make(request, client_software_name="bad name!",
                                          client_software_version="1.0"))
    assert response.error_code == ErrorCode.invalid_request


@pytest.mark.parametrize(("api_key", "version"), [(3, 14), (3, 200), (19, 8), (20, 7),
                                                  (32, 5), (10, 7), (60, 3), (37, 4)])
def test_unknown_version_of_a_served_api_closes_only_that_connection(
        shared_server: ServerProcess, api_key: int, version: int) -> None:
    # None of these has a schema in the codec (no request body can be read, nor an answer
    # written in that version); Kafka closes the connection on such requests.
    with WireClient(shared_server.bootstrap) as client:
        client.send_raw(framed(header(api_key, version, 77) + b"\x00" * 8))
        assert client.is_closed()
    assert_healthy(shared_server)


def _unserved_versions_with_a_schema(wire: WireClient) -> list[tuple[int, int]]:
    advertised = wire.request(api_versions_v0()).api_keys
    out = []
    for api in advertised:
        for version in protocol.known_versions(api.api_key):
            if not api.min_version <= version <= api.max_version:
                out.append((api.api_key, version))
    return out


def test_unsupported_version_with_a_schema_closes_the_connection(wire: WireClient) -> None:
    """A served API at a version the codec knows but we do not serve: the connection is closed,
    as Kafka's SocketServer closes it for a version it has not enabled."""
    candidates = _unserved_versions_with_a_schema(wire)
    assert candidates, "OffsetCommit v10 and OffsetFetch v10 are in the codec but not served"
    address = wire.sock.getpeername()[0] + f":{wire.sock.getpeername()[1]}"
    for api_key, version in candidates:
        found = protocol.schema(api_key, version)
        with WireClient(address) as client:
            client.send_raw(protocol.encode_request(protocol.make(found.request_type), 321))
            assert client.is_closed(), f"{protocol.api_name(api_key)} v{version}"


# --- truncated and garbage frames -------------------------------------------------------------
def _valid(body: Any) -> bytes:
    return protocol.encode_request(body, 99)[4:]


BAD_FRAMES = {
    "empty": b"",
    "shorter-than-header": b"\x00\x03\x00",
    "header-without-client-id": header(3, 1, 1)[:8],
    "client-id-length-past-end": struct.pack(">hhih", 3, 1, 1, 50) + b"abc",
    "client-id-length-negative": struct.pack(">hhih", 3, 1, 1, -7),
    "client-id-not-utf8": struct.pack(">hhih", 3, 1, 1, 2) + b"\xff\xfe",
    "metadata-v1-truncated-body": _valid(metadata_request(1, ["abc", "def"]))[:-3],
    "metadata-v12-truncated-tags": _valid(metadata_request(12, ["abc"]))[:-1],
    "metadata-v1-array-longer-than-frame": header(3, 1, 1) + struct.pack(">i", 1000),
    "metadata-v12-compact-array-longer-than-frame": header(3, 12, 1) + b"\x00" + b"\xe9\x07",
    "metadata-v12-varint-too-long": header(3, 12, 1) + b"\xff" * 12,
    "metadata-v1-string-length-past-end": header(3, 1, 1) + struct.pack(">ih", 1, 30000),
    "create-topics-garbage": header(19, 7, 1) + bytes(range(256)),
    "describe-configs-garbage": header(32, 4, 1) + b"\xff" * 40,
    "api-versions-v3-garbage": header(18, 3, 1) + b"\x00\xff\xff\xff\xff\xff",
    "random-bytes": bytes.fromhex("8badf00ddeadbeefcafebabe0123456789abcdef" * 5),
}


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_malformed_frame_closes_only_that_connection(shared_server: ServerProcess,
                                                     name: str) -> None:
    bystander = WireClient(shared_server.bootstrap)
    try:
        bystander.request(api_versions_v0())
        with WireClient(shared_server.bootstrap) as client:
            client.send_raw(framed(BAD_FRAMES[name]))
            assert client.is_closed()
        assert bystander.request(metadata_request(4, None)).brokers[0].node_id == 1
    finally:
        bystander.close()
    assert_healthy(shared_server)


# Array lengths near the top of their range: kio's native reader reserves memory for the
# declared element count before reading any element, so these make it ask for many GB at once.
HUGE_ARRAYS = {
    "metadata-v12-compact-array-2^32-2": header(3, 12, 1) + b"\x00" + b"\xff\xff\xff\xff\x0f",
    "metadata-v1-array-2^31-1": header(3, 1, 1) + struct.pack(">i", 2**31 - 1),
    "create-topics-v7-configs-2^32-2": header(19, 7, 1) + b"\x00" + b"\x02" + b"\x02t"
    + struct.pack(">ih", 1, 1) + b"\x01" + b"\xff\xff\xff\xff\x0f",
    "describe-configs-v1-2^31-1": header(32, 1, 1) + struct.pack(">i", 2**31 - 1),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HUGE_ARRAYS))
def test_huge_declared_array_length_does_not_kill_the_server(tmp_path: Path, name: str) -> None:
    """A 20-byte frame declaring a 4-billion-element array must close that connection only.

    The server runs with its address space limited to 4 GB, as on a small laptop, so the
    outcome does not depend on how much memory the test machine has.
    """
    server = start_limited_server(tmp_path / "data", address_space_gb=4)
    try:
        with WireClient(server.bootstrap) as client:
            client.send_raw(framed(HUGE_ARRAYS[name]))
            assert client.is_closed()
        wait_until(lambda: server.event("connection closed") or not server.alive(),
                   message="the connection to be closed")
        why = [line for line in server.output().splitlines() if "memory allocation" in line]
        assert server.proc is not None
        assert server.alive(), f"server died ({server.proc.returncode}): {why}"
        assert_healthy(server)
    finally:
        server.stop()
        server.kill()


@pytest.mark.parametrize("valid", [1, 3, 30])
def test_answers_before_a_bad_frame_are_still_delivered(wire: WireClient, valid: int) -> None:
    # Kafka answers a connection's requests one at a time, so every request read before the bad
    # frame has been answered by the time the connection is closed. Pipelined here, in one write.
    good = b"".join(protocol.encode_request(metadata_request(1, None), i) for i in range(valid))
    wire.send_raw(good + framed(b"\x00\x03"))
    answered = []
    try:
        for _ in range(valid):
            answered.append(wire.recv(3, 1)[0])
    except ConnectionError:
        pass
    assert answered == list(range(valid))
    assert wire.is_closed()


def test_answers_of_async_requests_before_a_bad_frame_are_delivered(wire: WireClient) -> None:
    # CreateTopics and auto-creating Metadata are answered asynchronously (the topic is
    # persisted first); a bad frame right behind them must not drop their answers.
    topic = kio_class("create_topics", 7, "request", "CreatableTopic")
    create = kio_class("create_topics", 7, "request", "CreateTopicsRequest")
    name = f"before-bad-{uuid.uuid4().hex[:8]}"
    requests = [
        protocol.make(create, topics=(protocol.make(topic, name=name, num_partitions=1,
                                                    replication_factor=1),)),
        metadata_request(12, [f"{name}-auto"], allow_auto=True),
        metadata_request(12, [name]),
    ]
    wire.send_raw(b"".join(protocol.encode_request(body, 70 + i) for i, body in
                           enumerate(requests)) + framed(b"\x00\x03"))
    answered = []
    try:
        for body in requests:
            answered.append(wire.recv(int(body.__api_key__), int(body.__version__))[0])
    except ConnectionError:
        pass
    assert answered == [70, 71, 72]
    assert wire.is_closed()


@pytest.mark.parametrize("cut", [1, 3, 4, 10])
def test_client_hanging_up_mid_frame(shared_server: ServerProcess, cut: int) -> None:
    frame = protocol.encode_request(metadata_request(12, ["x"]), 1)
    with WireClient(shared_server.bootstrap) as client:
        client.send_raw(frame[:cut])
    assert_healthy(shared_server)


def test_server_logs_the_bad_request(shared_server: ServerProcess) -> None:
    with WireClient(shared_server.bootstrap) as client:
        client.send_raw(framed(header(3, 12, 1) + b"\xff" * 12))
        assert client.is_closed()
    found = shared_server.wait_event("closing connection: bad request", api="Metadata",
                                     version=12)
    assert found["level"] == "warning" and found["frame_head"].startswith("0003000c")
