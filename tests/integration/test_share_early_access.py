"""Kafka 4.0's early-access share APIs (ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
ShareAcknowledge v0) over TCP against a real server process, next to confluent-kafka's v1
``ShareConsumer`` in the same group.

1. a v0 member (raw frames: there is no Kafka 4.0 client on this machine) and a v1
   ShareConsumer consume one topic in one group: every record is accepted exactly once, both
   get records;
2. bad v0 input gets Kafka's errors, and v0's PartitionMaxBytes 0 acknowledges without
   fetching.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType

import protocol
from protocol import ApiKey, ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient
from tests.integration.share_clients import (
    FetchTopics,
    Ledger,
    ShareWorker,
    create_topic,
    produce,
    set_group_configs,
    share_acknowledge,
    share_config,
    share_fetch,
    share_group_describe,
    share_heartbeat,
)

TOPIC = "early"
GROUP = "early-group"
ACCEPT = int(AcknowledgeType.ACCEPT)
OVERRIDES = {"group.share.heartbeat.interval.ms": "500",
             "group.share.min.heartbeat.interval.ms": "100"}


def _acquired(response: object) -> list[tuple[int, int]]:
    return [(r.first_offset, r.last_offset) for t in response.responses  # type: ignore[attr-defined]
            for p in t.partitions for r in p.acquired_records]


def _join_v0(client: WireClient, member_id: str) -> uuid.UUID:
    """ShareGroupHeartbeat v0 until the member has partition 0; the topic's id."""
    response = share_heartbeat(client, GROUP, member_id, 0, [TOPIC], version=0)
    assert response.error_code == 0, response

    def assigned() -> uuid.UUID | None:
        nonlocal response
        if response.assignment is not None and response.assignment.topic_partitions:
            [tp] = response.assignment.topic_partitions
            return tp.topic_id
        response = share_heartbeat(client, GROUP, member_id, response.member_epoch, None,
                                   version=0)
        assert response.error_code == 0, response
        return None

    topic_id: uuid.UUID = wait_until(assigned, 15, interval=0.1,
                                     message=f"{member_id} to be assigned")
    return topic_id


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server with the topic, and the group configured to start at the earliest offset."""
    started = ServerProcess(tmp_path / "data", OVERRIDES).start().wait_loaded()
    try:
        create_topic(started.bootstrap, TOPIC)
        set_group_configs(started.bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
        yield started
    finally:
        started.stop()


class EarlyMember:
    """A v0 share member on its own thread: ShareFetch v0, every record accepted in the next
    ShareFetch (piggybacked), closed with a final ShareAcknowledge v0."""

    def __init__(self, bootstrap: str, member_id: str) -> None:
        self.bootstrap = bootstrap
        self.member_id = member_id
        self.accepted: list[int] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.joined = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with WireClient(self.bootstrap, timeout=10) as client:
                topic_id = _join_v0(client, self.member_id)
                self.joined.set()
                epoch = 0
                pending: list[tuple[int, int, tuple[int, ...]]] = []
                while not self.stop.is_set():
                    topics: FetchTopics = {topic_id: {0: pending}}
                    response = share_fetch(client, GROUP, self.member_id, epoch, topics,
                                           max_wait_ms=200, version=0)
                    if response.error_code != 0:
                        self.errors.append(f"fetch {ErrorCode(response.error_code).name}")
                        return
                    for t in response.responses:
                        for p in t.partitions:
                            if p.acknowledge_error_code != 0:
                                self.errors.append(f"ack {p.acknowledge_error_code}")
                    self.accepted.extend(o for f, la, _ in pending for o in range(f, la + 1))
                    pending = [(f, la, (ACCEPT,)) for f, la in _acquired(response)]
                    epoch += 1
                final = share_acknowledge(client, GROUP, self.member_id, -1,
                                          {topic_id: {0: pending}}, version=0)
                if final.error_code == 0 and all(
                        p.error_code == 0 for t in final.responses for p in t.partitions):
                    self.accepted.extend(o for f, la, _ in pending for o in range(f, la + 1))
                else:
                    self.errors.append(f"final acknowledge {final}")
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))


@pytest.mark.slow
def test_a_v0_member_and_a_v1_share_consumer_share_one_group(server: ServerProcess) -> None:
    bootstrap = server.bootstrap
    with WireClient(bootstrap) as client:
        [versions] = [k for k in client.request(protocol.make(
            protocol.schema(ApiKey.API_VERSIONS, 3).request_type,
            client_software_name="wire", client_software_version="1")).api_keys
            if k.api_key == ApiKey.SHARE_FETCH]
        assert (versions.min_version, versions.max_version) == (0, 1)
    early = EarlyMember(bootstrap, str(uuid.uuid4()))
    early.thread.start()
    assert early.joined.wait(20), early.errors
    ledger = Ledger()
    worker = ShareWorker("v1", share_config(bootstrap, GROUP), [TOPIC], ledger).start()
    try:
        def both_assigned() -> bool:
            members = share_group_describe(bootstrap, GROUP, version=0).members
            return len(members) == 2 and all(m.assignment.topic_partitions
                                             for m in members)

        wait_until(both_assigned, 20, message="both members assigned the partition")
        total = 300
        produce(bootstrap, TOPIC, total, per_flush=10)

        def all_accepted() -> bool:
            return len(early.accepted) + len(ledger.committed_offsets()) >= total

        wait_until(all_accepted, 60, interval=0.2, message="every record accepted")
    finally:
        early.stop.set()
        early.thread.join(20)
        worker.close()
    assert early.errors == [] and ledger.errors == []
    v1 = [a.offset for a in ledger.acks() if a.ok]
    counts = Counter(early.accepted + v1)
    assert set(counts) == set(range(total))
    assert max(counts.values()) == 1, [o for o, n in counts.items() if n > 1]
    assert early.accepted and v1, (len(early.accepted), len(v1))
    described = share_group_describe(bootstrap, GROUP, version=0)
    assert described.error_code == 0


@pytest.mark.slow
def test_bad_v0_share_requests_get_kafkas_errors(server: ServerProcess) -> None:
    bootstrap = server.bootstrap
    produce(bootstrap, TOPIC, 10)
    E = ErrorCode
    with WireClient(bootstrap) as client:
        # v0: the coordinator generates the member id of a member joining without one
        joined = share_heartbeat(client, GROUP, "", 0, [TOPIC], version=0)
        assert joined.error_code == 0 and len(joined.member_id) == 22
        assert share_heartbeat(client, GROUP, joined.member_id, -1, None,
                               version=0).error_code == 0
        assert share_heartbeat(client, GROUP, "", 1, None, version=0).error_code == \
            E.invalid_request
        assert share_heartbeat(client, GROUP, "", 0, [TOPIC]).error_code == E.invalid_request
        assert share_heartbeat(client, GROUP, "m0", 0, None, version=0).error_code == \
            E.invalid_request
        topic_id = _join_v0(client, "m0")
        whole: FetchTopics = {topic_id: {0: []}}
        ack: FetchTopics = {topic_id: {0: [(0, 4, (ACCEPT,))]}}
        # acknowledgements may not open a session; ShareAcknowledge cannot open one
        assert share_fetch(client, GROUP, "m0", 0, ack, version=0).error_code == \
            E.invalid_request
        assert share_acknowledge(client, GROUP, "m0", 0, ack, version=0).error_code == \
            E.invalid_share_session_epoch
        assert share_fetch(client, GROUP, "", 0, whole, version=0).error_code == \
            E.invalid_request
        # PartitionMaxBytes 0: a session opened, nothing fetched
        empty = share_fetch(client, GROUP, "m0", 0, whole, version=0,
                            partition_max_bytes=0)
        assert (empty.error_code, _acquired(empty)) == (0, [])
        assert share_fetch(client, GROUP, "m0", 7, whole, version=0).error_code == \
            E.invalid_share_session_epoch
        fetched = share_fetch(client, GROUP, "m0", 1, whole, version=0)
        assert (fetched.error_code, _acquired(fetched)) == (0, [(0, 9)])
        # acknowledge types past REJECT (v2's Renew) and descending batches: INVALID_REQUEST
        for epoch, batches in ((2, [(0, 4, (4,))]),
                               (3, [(5, 9, (ACCEPT,)), (0, 4, (ACCEPT,))])):
            bad = share_acknowledge(client, GROUP, "m0", epoch, {topic_id: {0: batches}},
                                    version=0)
            assert [p.error_code for t in bad.responses for p in t.partitions] == \
                [E.invalid_request], bad
        # acknowledge only (PartitionMaxBytes 0), then close: accepted, nothing redelivered
        done = share_fetch(client, GROUP, "m0", 4, {topic_id: {0: [(0, 9, (ACCEPT,))]}},
                           version=0, partition_max_bytes=0)
        assert [p.acknowledge_error_code for t in done.responses for p in t.partitions] \
            == [E.none] and _acquired(done) == []
        assert share_acknowledge(client, GROUP, "m0", -1, {}, version=0).error_code == 0
        produce(bootstrap, TOPIC, 2, start=10)
        again = share_fetch(client, GROUP, "m0", 0, whole, max_wait_ms=5000, version=0)
        assert (again.error_code, _acquired(again)) == (0, [(10, 11)])
    assert server.alive()
