"""aiokafka 0.14 against the server: it speaks only old, non-flexible versions (ApiVersions v0,
Metadata v5, FindCoordinator v1, CreateTopics v3), which must keep working."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.client import AIOKafkaClient
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.structs import TopicPartition

from tests.harness import ServerProcess


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def connected(server: ServerProcess) -> AIOKafkaClient:
    client = AIOKafkaClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
    await client.bootstrap()
    return client


async def test_bootstrap_sees_one_broker_and_controller(shared_server: ServerProcess) -> None:
    client = await connected(shared_server)
    try:
        brokers = client.cluster.brokers()
        assert [(b.nodeId, b.host, b.port) for b in brokers] == [(1, "127.0.0.1",
                                                                  shared_server.port)]
        assert client.cluster.controller.nodeId == 1
    finally:
        await client.close()


async def test_metadata_auto_creates_with_default_partitions(
        shared_server: ServerProcess) -> None:
    client = await connected(shared_server)
    name = unique("aio-auto")
    try:
        await client.set_topics([name])  # Metadata v5 with allow_auto_topic_creation
        assert client.cluster.partitions_for_topic(name) == {0}
        assert client.cluster.leader_for_partition(TopicPartition(name, 0)) == 1
        everything = await client.fetch_all_metadata()
        assert name in everything.topics()
    finally:
        await client.close()


async def test_admin_create_describe_grow_delete(shared_server: ServerProcess) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=shared_server.bootstrap,
                                request_timeout_ms=10000)
    await admin.start()
    name = unique("aio-admin")
    try:
        created = await admin.create_topics([NewTopic(name, 3, 1)])
        assert [(t[0], t[1]) for t in created.topic_errors] == [(name, 0)]
        again = await admin.create_topics([NewTopic(name, 3, 1)])  # errors are returned
        assert again.topic_errors[0][1] == TopicAlreadyExistsError.errno
        assert name in await admin.list_topics()
        [described] = await admin.describe_topics([name])
        assert described["error_code"] == 0
        assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
        assert {p["leader"] for p in described["partitions"]} == {1}
        await admin.create_partitions({name: NewPartitions(5)})
        [grown] = await admin.describe_topics([name])
        assert len(grown["partitions"]) == 5
        cluster = await admin.describe_cluster()
        assert cluster["controller_id"] == 1
        started = shared_server.event("started")
        assert started is not None and cluster["cluster_id"] == started["cluster_id"]
        await admin.delete_topics([name])
        assert name not in await admin.list_topics()
    finally:
        await admin.close()


async def test_coordinator_lookup(shared_server: ServerProcess) -> None:
    client = await connected(shared_server)
    try:
        # FindCoordinator v1 (aiokafka's maximum), coordinator type 0 = group
        assert await client.coordinator_lookup(0, unique("aio-group")) == 1
    finally:
        await client.close()


@pytest.mark.slow
async def test_no_auto_creation_when_disabled(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {"auto.create.topics.enable": "false"}).start()
    try:
        client = await connected(server)
        name = unique("aio-missing")
        try:
            metadata = await client.fetch_all_metadata()
            assert metadata.topics() == set()
            await client.set_topics([name])
            assert client.cluster.partitions_for_topic(name) is None
            assert name in client.cluster.unauthorized_topics or \
                name not in client.cluster.topics()
        finally:
            await client.close()
    finally:
        server.stop()


@pytest.mark.slow
async def test_auto_creation_uses_num_partitions(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {"num.partitions": "3"}).start()
    try:
        client = await connected(server)
        name = unique("aio-three")
        try:
            await client.set_topics([name])
            assert client.cluster.partitions_for_topic(name) == {0, 1, 2}
        finally:
            await client.close()
    finally:
        server.stop()
