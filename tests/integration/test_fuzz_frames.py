"""Property test: random and mutated frames never kill the server nor stall other connections.

Valid requests of every served (API, version) are encoded, then mutated (bytes flipped,
truncated, extended, size prefixes made absurd or negative, lengths inside the body made huge or
negative, api keys and versions changed) or replaced by random bytes, and thrown at one running
server in batches, one connection per batch. After each batch the client half-closes and reads
until the server closes: every answer must be framed properly and answers must come back in
request order. Throughout, a well-behaved client on its own connection must keep getting
ApiVersions and Metadata answers, and the server process must stay alive.
"""

from __future__ import annotations

import datetime
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import protocol
from coordinator.apis import build_registry
from protocol import ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import (
    WireClient,
    kio_class,
    metadata_request,
    start_limited_server,
)

MAX_BYTES = 1 << 20  # socket.request.max.bytes for this server: absurd sizes stay cheap
EXAMPLES = 900
MIN_FRAMES = 10_000
CHECK_EVERY = 20  # batches between two checks of the well-behaved client
DRAIN_TIMEOUT = 10.0
TOPICS = [f"fz-{i}" for i in range(6)]


# --- the corpus: one or more valid requests of every served (api, version) ---------------------
def _corpus() -> list[tuple[int, int, Any]]:
    out: list[tuple[int, int, Any]] = []

    def add(api: str, key: int, versions: range, build: Callable[[int], list[Any]]) -> None:
        for version in versions:
            for body in build(version):
                out.append((key, version, body))

    def cls(api: str, version: int, name: str) -> type:
        return kio_class(api, version, "request", name)

    add("api_versions", 18, range(0, 5), lambda v: [protocol.make(
        cls("api_versions", v, "ApiVersionsRequest"), client_software_name="fuzz",
        client_software_version="1.0")])
    add("metadata", 3, range(0, 14), lambda v: [
        metadata_request(v, TOPICS[:2], allow_auto=True), metadata_request(v, None),
        metadata_request(v, ["fz-auto"], allow_auto=False)])
    add("find_coordinator", 10, range(0, 7), lambda v: [protocol.make(
        cls("find_coordinator", v, "FindCoordinatorRequest"), key="group", key_type=0,
        coordinator_keys=("g1", "g2"))])

    def create(v: int) -> list[Any]:
        topic = cls("create_topics", v, "CreatableTopic")
        config = cls("create_topics", v, "CreatableTopicConfig")
        assignment = cls("create_topics", v, "CreatableReplicaAssignment")
        request = cls("create_topics", v, "CreateTopicsRequest")
        return [
            protocol.make(request, validate_only=False, topics=(protocol.make(
                topic, name=TOPICS[v % len(TOPICS)], num_partitions=2, replication_factor=1,
                assignments=(), configs=(protocol.make(config, name="retention.ms",
                                                       value="1000"),)),)),
            protocol.make(request, validate_only=True, topics=(protocol.make(
                topic, name="fz-assigned", num_partitions=-1, replication_factor=-1,
                assignments=(protocol.make(assignment, partition_index=0, broker_ids=(1,)),),
                configs=()),)),
        ]

    add("create_topics", 19, range(2, 8), create)

    def delete(v: int) -> list[Any]:
        request = cls("delete_topics", v, "DeleteTopicsRequest")
        if v >= 6:
            state = cls("delete_topics", v, "DeleteTopicState")
            return [protocol.make(request, topics=(protocol.make(state, name=TOPICS[3]),))]
        return [protocol.make(request, topic_names=(TOPICS[3],))]

    add("delete_topics", 20, range(1, 7), delete)

    def partitions(v: int) -> list[Any]:
        topic = cls("create_partitions", v, "CreatePartitionsTopic")
        assignment = cls("create_partitions", v, "CreatePartitionsAssignment")
        request = cls("create_partitions", v, "CreatePartitionsRequest")
        return [protocol.make(request, validate_only=v % 2 == 0, topics=(
            protocol.make(topic, name=TOPICS[0], count=3 + v,
                          assignments=(protocol.make(assignment, broker_ids=(1,)),)),))]

    add("create_partitions", 37, range(0, 4), partitions)
    add("describe_cluster", 60, range(0, 3), lambda v: [protocol.make(
        cls("describe_cluster", v, "DescribeClusterRequest"),
        include_cluster_authorized_operations=True, endpoint_type=1)])

    def configs(v: int) -> list[Any]:
        resource = cls("describe_configs", v, "DescribeConfigsResource")
        return [protocol.make(cls("describe_configs", v, "DescribeConfigsRequest"),
                              include_synonyms=True, include_documentation=True,
                              resources=(protocol.make(resource, resource_type=4,
                                                       resource_name="1",
                                                       configuration_keys=("num.partitions",)),
                                         protocol.make(resource, resource_type=2,
                                                       resource_name=TOPICS[0],
                                                       configuration_keys=None)))]

    add("describe_configs", 32, range(1, 5), configs)
    # A neutral Produce would have acks=0, which by design gets no answer at all.
    add("produce", 0, range(3, 12), lambda v: [protocol.make(
        cls("produce", v, "ProduceRequest"), acks=-1, timeout=datetime.timedelta(seconds=1),
        topic_data=())])
    # APIs later issues add to the table: a neutral request of each served version
    covered = {(key, version) for key, version, _ in out}
    for spec in build_registry().specs():
        for version in range(spec.min_version, spec.max_version + 1):
            if (int(spec.key), version) not in covered:
                request_type = protocol.schema(int(spec.key), version).request_type
                out.append((int(spec.key), version, protocol.make(request_type)))
    return out


CORPUS = _corpus()
SERVED = {(key, version) for key, version, _ in CORPUS}


def test_corpus_covers_every_served_version() -> None:
    advertised = {(int(spec.key), version) for spec in build_registry().specs()
                  for version in range(spec.min_version, spec.max_version + 1)}
    assert advertised == SERVED
    expected = {(18, v) for v in range(5)} | {(3, v) for v in range(14)} | \
        {(10, v) for v in range(7)} | {(19, v) for v in range(2, 8)} | \
        {(20, v) for v in range(1, 7)} | {(37, v) for v in range(4)} | \
        {(60, v) for v in range(3)} | {(32, v) for v in range(1, 5)}
    assert expected <= SERVED


# --- frames and mutations ---------------------------------------------------------------------
class Frame:
    """Bytes to send, whether the size prefix still frames them, and the correlation id."""

    def __init__(self, data: bytes, correlation_id: int, mutated: bool) -> None:
        self.data = data
        self.correlation_id = correlation_id
        self.mutated = mutated

    def __repr__(self) -> str:
        return f"Frame({'mutated' if self.mutated else 'valid'}, {self.data.hex()})"

    @property
    def framed(self) -> bool:
        if len(self.data) < 4:
            return False
        (size,) = struct.unpack_from(">i", self.data)
        return size == len(self.data) - 4


_ABSURD_INT32 = [0x7FFFFFFF, -1, -2, -(2**31), 0x40000000, 0x7FFFFFFE, 0xFFFF, 0x10000, 1000]
_BIG_VARINTS = [b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08",
                b"\xff\xff\xff\xff\xff\xff", b"\xe9\x07", b"\x80\x80\x04"]


@st.composite
def mutation(draw: st.DrawFn) -> Callable[[bytearray], bytearray]:
    kind = draw(st.sampled_from([
        "flip", "bitflip", "truncate", "truncate-refit", "extend", "extend-refit", "size",
        "version", "api-key", "int32", "int16", "varint", "insert", "delete",
    ]))
    position = draw(st.integers(0, 10_000))
    byte = draw(st.integers(0, 255))
    blob = draw(st.binary(min_size=1, max_size=64))
    absurd = draw(st.sampled_from(_ABSURD_INT32))
    varint = draw(st.sampled_from(_BIG_VARINTS))
    version = draw(st.one_of(st.integers(-(2**15), 2**15 - 1), st.integers(-2, 20)))

    def refit(buf: bytearray) -> bytearray:
        if len(buf) >= 4:
            struct.pack_into(">i", buf, 0, len(buf) - 4)
        return buf

    def apply(buf: bytearray) -> bytearray:
        body = max(len(buf) - 4, 1)
        at = 4 + position % body
        if kind == "flip" and len(buf) > 4:
            buf[min(at, len(buf) - 1)] = byte
        elif kind == "bitflip" and len(buf) > 4:
            buf[min(at, len(buf) - 1)] ^= 1 << (byte % 8)
        elif kind in ("truncate", "truncate-refit"):
            del buf[position % max(len(buf), 1):]
            if kind == "truncate-refit":
                refit(buf)
        elif kind in ("extend", "extend-refit"):
            buf += blob
            if kind == "extend-refit":
                refit(buf)
        elif kind == "size" and len(buf) >= 4:
            choices = [absurd, MAX_BYTES + 1, MAX_BYTES, len(buf) - 4 + (byte % 9) - 4,
                       byte % 8, 0]
            struct.pack_into(">i", buf, 0, choices[position % len(choices)])
        elif kind == "version" and len(buf) >= 8:
            struct.pack_into(">h", buf, 6, version)
        elif kind == "api-key" and len(buf) >= 6:
            struct.pack_into(">h", buf, 4, version)
        elif kind == "int32" and len(buf) >= 8:
            struct.pack_into(">i" if absurd < 2**31 else ">I", buf,
                             4 + position % (len(buf) - 7), absurd)
        elif kind == "int16" and len(buf) >= 6:
            struct.pack_into(">h", buf, 4 + position % (len(buf) - 5),
                             [-1, -2, 32767, -32768][byte % 4])
        elif kind == "varint":
            buf[at:at] = varint
            if byte % 2:
                refit(buf)
        elif kind == "insert":
            buf[at:at] = blob
            if byte % 2:
                refit(buf)
        elif kind == "delete" and len(buf) > 4:
            del buf[at : at + 1 + byte % 16]
            if byte % 2:
                refit(buf)
        return buf

    return apply


@st.composite
def frame(draw: st.DrawFn, correlation_id: int) -> Frame:
    choice = draw(st.sampled_from(["valid", "mutated", "mutated", "mutated", "random",
                                   "random-header"]))
    if choice == "random":
        payload = draw(st.binary(max_size=300))
        size = draw(st.one_of(st.just(len(payload)), st.integers(-(2**31), 2**31 - 1)))
        return Frame(struct.pack(">i", size) + payload, -1, True)
    if choice == "random-header":
        key = draw(st.sampled_from(sorted({k for k, _ in SERVED})))
        version = draw(st.integers(-3, 20))
        payload = struct.pack(">hhi", key, version, correlation_id) + draw(
            st.binary(max_size=200))
        return Frame(struct.pack(">i", len(payload)) + payload, correlation_id, True)
    _key, _version, body = draw(st.sampled_from(CORPUS))
    data = bytearray(protocol.encode_request(body, correlation_id, "fuzz"))
    if choice == "valid":
        return Frame(bytes(data), correlation_id, False)
    for apply in draw(st.lists(mutation(), min_size=1, max_size=3)):
        data = apply(data)
    cid = struct.unpack_from(">i", data, 8)[0] if len(data) >= 12 else -1
    return Frame(bytes(data), cid, True)


@st.composite
def batch(draw: st.DrawFn) -> list[Frame]:
    count = draw(st.integers(5, 22))
    return [draw(frame(1000 + i)) for i in range(count)]


# --- talking to the server --------------------------------------------------------------------
def exchange(bootstrap: str, frames: list[Frame]) -> tuple[bytes, bool]:
    """Send every frame on one connection, half-close, read until the server closes.

    Returns what was read and whether the server closed within ``DRAIN_TIMEOUT``."""
    host, port = bootstrap.rsplit(":", 1)
    received = bytearray()
    with socket.create_connection((host, int(port)), timeout=DRAIN_TIMEOUT) as sock:
        try:
            sock.sendall(b"".join(f.data for f in frames))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close on a bad frame while we are still sending
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                break
            except OSError:
                return bytes(received), True
            if not chunk:
                return bytes(received), True
            received += chunk
    return bytes(received), False


def answered_ids(data: bytes) -> list[int]:
    """Correlation ids of the size-prefixed response frames in ``data`` (all must be whole)."""
    ids = []
    offset = 0
    while offset < len(data):
        assert len(data) - offset >= 8, f"partial response frame at {offset}: {data[offset:]!r}"
        size, cid = struct.unpack_from(">ii", data, offset)
        assert 4 <= size <= len(data) - offset - 4, f"bad response size {size} at {offset}"
        ids.append(cid)
        offset += 4 + size
    return ids


class Observer:
    """The well-behaved client: one connection kept open for the whole run."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.client = WireClient(server.bootstrap, timeout=5.0)
        versions_v3 = kio_class("api_versions", 3, "request", "ApiVersionsRequest")
        self.api_versions = protocol.make(versions_v3, client_software_name="observer",
                                          client_software_version="1.0")
        self.checks = 0

    def check(self, context: str) -> None:
        assert self.server.proc is not None
        assert self.server.alive(), (
            f"server died ({self.server.proc.returncode}) {context}\n"
            f"its last words: {_last_words(self.server)}")
        versions = self.client.request(self.api_versions)
        assert versions.error_code == ErrorCode.none, context
        metadata = self.client.request(metadata_request(12, []))  # no topics: cheap answer
        assert [b.node_id for b in metadata.brokers] == [1], context
        self.checks += 1


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # Limited to 4 GB of address space, as on a small laptop (see start_limited_server).
    process = start_limited_server(tmp_path_factory.mktemp("fuzz") / "data",
                                   {"socket.request.max.bytes": str(MAX_BYTES),
                                    "connections.max.idle.ms": "30000"}, address_space_gb=4)
    try:
        yield process
    finally:
        process.stop()
        process.kill()


def _kills(frames: list[Frame], log_dir: Path) -> str | None:
    """Send ``frames`` on one connection to a fresh server; its dying words if it dies."""
    server = start_limited_server(log_dir, {"socket.request.max.bytes": str(MAX_BYTES)},
                                  address_space_gb=4)
    try:
        try:
            exchange(server.bootstrap, frames)
        except OSError:
            pass
        try:
            wait_until(lambda: not server.alive(), timeout=0.5)
        except AssertionError:
            return None
        return _last_words(server)
    finally:
        server.kill()


def _last_words(server: ServerProcess) -> str:
    lines = server.output().splitlines()
    notable = [line for line in lines
               if any(word in line for word in ("memory allocation", "panicked", "Error"))]
    return "\n".join(notable[:5] + lines[-12:])


def minimize(frames: list[Frame], log_dir: Path) -> str:
    """Greedily drop frames while the rest still kills a fresh server; describe what is left."""
    if _kills(frames, log_dir / "whole") is None:
        return "replaying the batch on a fresh server does not kill it"
    kept = list(frames)
    for index in range(len(frames) - 1, -1, -1):
        trial = kept[:index] + kept[index + 1 :]
        if trial and _kills(trial, log_dir / f"without-{index}") is not None:
            kept = trial
    words = _kills(kept, log_dir / "minimal")
    return (f"minimal killing byte stream ({len(kept)} frame(s)): "
            f"{b''.join(f.data for f in kept).hex()}\nits last words: {words}")


# Found by this test: each declares an array of ~2**31 or ~2**32 elements in a few bytes, and
# the native decoder reserves memory for all of them at once (the process aborts on failure).
KNOWN_KILLERS = [
    Frame(bytes.fromhex(  # CreateTopics v2, a configs array of 0x6d6f... elements
        "0000003300130002000003e8000466757a7a000000010004667a2d3200000002000100656e74696f6e2e6d"
        "730004313030300000ea600000000000"), 1000, True),
    Frame(bytes.fromhex(  # Metadata v12, a compact topics array of 2**32 - 2 elements
        "000000110003000c000003e9000174" "00" "ffffffff0f"), 1001, True),
]


def _describe(frames: list[Frame]) -> str:
    return "\n".join(f"  {'M' if f.mutated else 'V'} {f.data[:96].hex()}"
                     + ("..." if len(f.data) > 96 else "") for f in frames)


def test_random_and_mutated_frames_never_hurt_the_server(fuzz_server: ServerProcess,
                                                        tmp_path: Path) -> None:
    observer = Observer(fuzz_server)
    observer.check("before fuzzing")
    stats = {"frames": 0, "batches": 0, "answers": 0}
    previous: list[Frame] = []
    started = time.monotonic()

    @example(KNOWN_KILLERS)
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate],  # no shrinking against one server
              suppress_health_check=list(HealthCheck))
    @given(batch())
    def throw(frames: list[Frame]) -> None:
        try:
            data, closed = exchange(fuzz_server.bootstrap, frames)
        except OSError:  # refused or reset at once: has the server gone?
            data, closed = None, False
        stats["frames"] += len(frames)
        stats["batches"] += 1
        if data is None or not fuzz_server.alive():
            try:
                wait_until(lambda: not fuzz_server.alive(), timeout=1.0)
            except AssertionError:
                pass
        if not fuzz_server.alive():
            # The batch that killed it is this one or the one before (the death may only be
            # noticed when the next connection is refused).
            culprits = previous + frames
            context = (f"after batch {stats['batches']}:\n{_describe(culprits)}\n"
                       + minimize(culprits, tmp_path / f"replay-{stats['batches']}"))
            observer.check(context)  # fails, with the server's last words
        context = f"after batch {stats['batches']}:\n{_describe(frames)}"
        assert data is not None, f"connection refused {context}"
        previous[:] = frames
        assert closed, (f"the server did not close a half-closed connection within "
                        f"{DRAIN_TIMEOUT}s {context}")
        ids = answered_ids(data)
        stats["answers"] += len(ids)
        if all(f.framed for f in frames):
            # Each frame is answered or closes the connection: answers are a prefix, in order,
            # and every frame before the first mutated one is answered.
            expected = [f.correlation_id for f in frames]
            assert ids == expected[: len(ids)], f"answers {ids} {context}"
            first_mutated = next((i for i, f in enumerate(frames) if f.mutated), len(frames))
            assert len(ids) >= first_mutated, f"valid requests unanswered {ids} {context}"
        if stats["batches"] % CHECK_EVERY == 0:
            observer.check(context)

    try:
        throw()
        observer.check("after fuzzing")
    finally:
        observer.client.close()
    elapsed = time.monotonic() - started
    print(f"fuzz: {stats} in {elapsed:.1f}s, {observer.checks} observer checks")
    assert stats["frames"] >= MIN_FRAMES, stats
    assert stats["answers"] > 0 and observer.checks >= EXAMPLES // CHECK_EVERY
