"""OffsetCommit v10 / OffsetFetch v10 (topics named by id) over the raw wire."""

from __future__ import annotations

import uuid
from typing import Any

import protocol
from protocol import ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class, metadata_request

UNKNOWN = uuid.UUID(int=0xDEADBEEF)


def _create(wire: WireClient, name: str, partitions: int) -> uuid.UUID:
    request = kio_class("create_topics", 7, "request", "CreateTopicsRequest")
    topic = kio_class("create_topics", 7, "request", "CreatableTopic")
    response = wire.request(protocol.make(request, topics=(protocol.make(
        topic, name=name, num_partitions=partitions, replication_factor=1),),
        timeout=__import__("datetime").timedelta(seconds=10)))
    assert response.topics[0].error_code == ErrorCode.none
    found = wire.request(metadata_request(12, [name]))
    return found.topics[0].topic_id


def _commit(wire: WireClient, group: str, topics: dict[uuid.UUID, dict[int, int]],
            version: int = 10) -> dict[tuple[Any, int], ErrorCode]:
    request = kio_class("offset_commit", version, "request", "OffsetCommitRequest")
    rtopic = kio_class("offset_commit", version, "request", "OffsetCommitRequestTopic")
    rpart = kio_class("offset_commit", version, "request", "OffsetCommitRequestPartition")
    response = wire.request(protocol.make(
        request, group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=tuple(protocol.make(rtopic, topic_id=tid, partitions=tuple(
            protocol.make(rpart, partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                          committed_metadata="m") for p, o in parts.items()))
            for tid, parts in topics.items())))
    return {(t.topic_id, p.partition_index): p.error_code
            for t in response.topics for p in t.partitions}


def _fetch(wire: WireClient, group: str, topics: dict[Any, list[int]] | None,
           version: int = 10) -> Any:
    request = kio_class("offset_fetch", version, "request", "OffsetFetchRequest")
    rgroup = kio_class("offset_fetch", version, "request", "OffsetFetchRequestGroup")
    rtopic = kio_class("offset_fetch", version, "request", "OffsetFetchRequestTopics")
    key = "topic_id" if version >= 10 else "name"
    entries = None if topics is None else tuple(
        protocol.make(rtopic, **{key: ref}, partition_indexes=tuple(parts))
        for ref, parts in topics.items())
    response = wire.request(protocol.make(
        request, groups=(protocol.make(rgroup, group_id=group, member_id=None, member_epoch=-1,
                                       topics=entries),), require_stable=False))
    (found,) = response.groups
    return found


def test_commit_and_fetch_by_topic_id(shared_server: ServerProcess) -> None:
    with WireClient(shared_server.bootstrap) as wire:
        versions = wire.request(protocol.make(
            kio_class("api_versions", 3, "request", "ApiVersionsRequest"),
            client_software_name="wire", client_software_version="1"))
        ranges = {int(k.api_key): int(k.max_version) for k in versions.api_keys}
        assert ranges[8] == 10 and ranges[9] == 10
        tid = _create(wire, "by-id", 2)
        wait_until(lambda: _commit(wire, "ids", {tid: {0: 10}})[(tid, 0)]
                   != ErrorCode.coordinator_load_in_progress, 20,
                   message="the coordinator partition to load")
        errors = _commit(wire, "ids", {tid: {0: 10, 1: 11, 5: 1}, UNKNOWN: {0: 1}})
        assert errors == {(tid, 0): ErrorCode.none, (tid, 1): ErrorCode.none,
                          (tid, 5): ErrorCode.unknown_topic_or_partition,
                          (UNKNOWN, 0): ErrorCode.unknown_topic_id}

        found = _fetch(wire, "ids", {tid: [0, 1, 3], UNKNOWN: [0]})
        assert found.error_code == ErrorCode.none
        got = {(t.topic_id, p.partition_index): (p.committed_offset, p.error_code)
               for t in found.topics for p in t.partitions}
        assert got == {(tid, 0): (10, ErrorCode.none), (tid, 1): (11, ErrorCode.none),
                       (tid, 3): (-1, ErrorCode.none),
                       (UNKNOWN, 0): (-1, ErrorCode.unknown_topic_id)}

        everything = _fetch(wire, "ids", None)
        assert [(t.topic_id, sorted((p.partition_index, p.committed_offset)
                                    for p in t.partitions)) for t in everything.topics] == [
            (tid, [(0, 10), (1, 11)])]

        # the same offsets by name (v9)
        by_name = _fetch(wire, "ids", {"by-id": [0, 1]}, version=9)
        assert [(p.partition_index, p.committed_offset) for t in by_name.topics
                for p in t.partitions] == [(0, 10), (1, 11)]
