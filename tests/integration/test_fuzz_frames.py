"""What the fuzz soak (``coordinator/soak``, ``tests/integration/test_fuzz_soak.py``) does not
check on its own: the byte streams that once killed the server, replayed on a server whose
address space is as small as a laptop's, and that on a connection every request before the
first malformed one is answered, in request order.

The frames, their sending and the reading of the answers are the soak's (``soak/mutate.py``,
``soak/fuzz.py``); the soak itself throws 10,000 of them at a server.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import pytest

import protocol
from coordinator.soak.corpus import served
from coordinator.soak.fuzz import answered_ids, exchange
from coordinator.soak.mutate import MAX_BYTES, Frame, batch
from protocol import ApiKey, ErrorCode
from protocol.legacy import LEGACY_APIS, upgrade_request
from tests.harness import ServerProcess
from tests.integration.conftest import WireClient, kio_class, metadata_request, start_limited_server

BATCHES = 150

# Found by the first fuzz test: each declares an array of ~2**31 or ~2**32 elements in a few
# bytes, and the native decoder reserved memory for all of them at once (the process aborted).
KNOWN_KILLERS = [
    Frame(bytes.fromhex(  # CreateTopics v2, a configs array of 0x6d6f... elements
        "0000003300130002000003e8000466757a7a000000010004667a2d3200000002000100656e74696f6e2e6d"
        "730004313030300000ea600000000000"), 1000, True),
    Frame(bytes.fromhex(  # Metadata v12, a compact topics array of 2**32 - 2 elements
        "000000110003000c000003e9000174" "00" "ffffffff0f"), 1001, True),
]


@pytest.fixture(scope="module")
def limited_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_limited_server(tmp_path_factory.mktemp("fuzz") / "data",
                                   {"socket.request.max.bytes": str(MAX_BYTES),
                                    "connections.max.idle.ms": "30000"}, address_space_gb=4)
    try:
        yield process
    finally:
        process.stop()
        process.kill()


def _still_serves(server: ServerProcess) -> None:
    assert server.alive(), server.output()[-2000:]
    with WireClient(server.bootstrap, timeout=5.0) as client:
        versions = client.request(protocol.make(
            kio_class("api_versions", 3, "request", "ApiVersionsRequest"),
            client_software_name="observer", client_software_version="1.0"))
        assert versions.error_code == ErrorCode.none
        metadata = client.request(metadata_request(12, []))
        assert [b.node_id for b in metadata.brokers] == [1]


def _describe(frames: Sequence[Frame]) -> str:
    return "\n".join(f"  {'M' if f.mutated else 'V'} {f.data[:96].hex()}" for f in frames)


def test_frames_that_once_killed_the_server_close_the_connection(
        limited_server: ServerProcess) -> None:
    for frames in ([KNOWN_KILLERS[0]], [KNOWN_KILLERS[1]], KNOWN_KILLERS):
        data, closed = exchange(limited_server.bootstrap, frames)
        assert closed, _describe(frames)
        assert answered_ids(data) == [], _describe(frames)
        _still_serves(limited_server)


def _unanswered(frame: Frame) -> bool:
    """Produce with acks=0 (valid, or still read as such once mutated): Kafka never answers it."""
    data = frame.data[4:]
    try:
        request = protocol.decode_request(data)
        return request.header.api_key == 0 and request.body.acks == 0
    except Exception:
        pass
    legacy = LEGACY_APIS.get(ApiKey.PRODUCE)
    if legacy is None or data[:2] != b"\x00\x00":
        return False
    try:  # Produce v0-v2, the versions Kafka 4.0 removed (served as v3)
        return bool(upgrade_request(legacy, data).body.acks == 0)
    except Exception:
        return False


@pytest.mark.slow
def test_requests_before_the_first_malformed_one_are_answered_in_order(
        limited_server: ServerProcess) -> None:
    rng = random.Random(9)
    corpus = served()
    answered = 0
    for number in range(BATCHES):
        # the soak's frames whose size prefix still frames them: none is cut short
        frames = [frame for frame in batch(rng, corpus) if frame.framed]
        data, closed = exchange(limited_server.bootstrap, frames)
        context = f"batch {number}:\n{_describe(frames)}"
        assert closed, f"a half-closed connection was not closed, {context}"
        ids = answered_ids(data)
        assert ids is not None, f"not whole response frames, {context}"
        # each frame is answered or closes the connection: the answers are a prefix, in
        # order, of the frames Kafka answers, and each frame before the first mutated one is
        # answered
        first_mutated = next((i for i, f in enumerate(frames) if f.mutated), len(frames))
        expected = [f.correlation_id for f in frames if not _unanswered(f)]
        must = [f.correlation_id for f in frames[:first_mutated] if not _unanswered(f)]
        assert ids == expected[: len(ids)], f"answers {ids} {context}"
        assert ids[: len(must)] == must, f"valid requests unanswered: {ids} {context}"
        answered += len(ids)
    assert answered >= BATCHES // 2  # valid requests got through and were answered
    _still_serves(limited_server)
