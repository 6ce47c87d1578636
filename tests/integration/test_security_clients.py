"""The three real clients against SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) over
SASL_PLAINTEXT and SASL_SSL, and against SSL listeners with and without client certificates:
they authenticate, form a group and commit; a wrong password fails with the client's own
authentication error while the server goes on serving everyone else."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaClient, AIOKafkaConsumer
from aiokafka.conn import create_conn
from aiokafka.errors import SaslAuthenticationFailed
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import KafkaTimeoutError
from kafka.structs import OffsetAndMetadata

from tests.harness import ServerProcess, wait_until
from tests.integration.security_setup import (
    Certs,
    aiokafka_config,
    confluent_config,
    kafka_python_config,
    make_certs,
    port,
    secure_server,
)

TOPIC = "secure-orders"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[ServerProcess]:
    with secure_server(tmp_path_factory.mktemp("secure") / "data", certs) as process:
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])[
            TOPIC].result(10)
        yield process


# --- authentication: every client, mechanism and SASL listener ---------------------------------
def metadata_confluent(config: dict[str, Any]) -> dict[int, tuple[str | None, int]]:
    brokers = AdminClient(config).list_topics(timeout=10).brokers
    return {b.id: (b.host, b.port) for b in brokers.values()}


def metadata_kafka_python(config: dict[str, Any]) -> list[str]:
    admin = KafkaAdminClient(**config, request_timeout_ms=10000)
    try:
        return list(admin.list_topics())
    finally:
        admin.close()


async def metadata_aiokafka(config: dict[str, Any]) -> list[tuple[str, int]]:
    client = AIOKafkaClient(**config, request_timeout_ms=10000)
    await client.bootstrap()
    try:
        return [(b.host, b.port) for b in client.cluster.brokers()]
    finally:
        await client.close()


@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_client_authenticates_with_every_mechanism(
        server: ServerProcess, certs: Certs, listener: str, mechanism: str) -> None:
    # Metadata advertises the listener the client came in on
    expected = ("127.0.0.1", port(server, listener))
    assert metadata_confluent(confluent_config(server, certs, listener, mechanism)) == {
        1: expected}
    assert TOPIC in metadata_kafka_python(kafka_python_config(server, certs, listener,
                                                              mechanism))
    assert asyncio.run(metadata_aiokafka(aiokafka_config(server, certs, listener,
                                                          mechanism))) == [expected]
    server.wait_event("authenticated", listener=listener, mechanism=mechanism,
                      principal="User:alice")


# --- a group and a commit per client ---------------------------------------------------------
def test_confluent_consumer_group_over_sasl_ssl_scram_sha_512(server: ServerProcess,
                                                              certs: Certs) -> None:
    config = confluent_config(server, certs, "SASL_SSL", "SCRAM-SHA-512")
    consumer = Consumer({**config, "group.id": "secure-confluent",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment() == [TopicPartition(TOPIC, 0)]
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 7)], asynchronous=False)
        [committed] = consumer.committed([TopicPartition(TOPIC, 0)], timeout=10)
        assert committed.offset == 7
    finally:
        consumer.close()


def test_kafka_python_consumer_group_over_sasl_plaintext_scram_sha_256(
        server: ServerProcess, certs: Certs) -> None:
    config = kafka_python_config(server, certs, "SASL_PLAINTEXT", "SCRAM-SHA-256")
    consumer = KafkaConsumer(TOPIC, group_id="secure-kafka-python", enable_auto_commit=False,
                             auto_offset_reset="earliest", **config)
    try:
        # the topic's metadata first: kafka-python 3.0.12 otherwise joins, rejoins when the
        # metadata arrives, and loses that join if a poll times out meanwhile (a busy machine)
        consumer.topics()
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200)
        partition = KpTopicPartition(TOPIC, 0)
        assert consumer.assignment() == {partition}
        # the committed offset it fetches for its position may still be on its way when a
        # poll returns (a busy machine): kafka-python's committed() would answer with that
        # fetch, sent before the commit below, so wait for the position first
        assert consumer.position(partition, timeout_ms=10000) == 0
        consumer.commit({partition: OffsetAndMetadata(9, "", -1)})
        assert consumer.committed(partition) == 9
    finally:
        consumer.close()


def test_aiokafka_consumer_group_over_sasl_ssl_plain(server: ServerProcess,
                                                     certs: Certs) -> None:
    async def run() -> int | None:
        consumer = AIOKafkaConsumer(TOPIC, group_id="secure-aiokafka",
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    **aiokafka_config(server, certs, "SASL_SSL", "PLAIN",
                                                      user="bob"))
        await consumer.start()
        try:
            partition = AioTopicPartition(TOPIC, 0)
            deadline = time.monotonic() + 20
            while not consumer.assignment() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert consumer.assignment() == {partition}
            await consumer.commit({partition: 11})
            return await consumer.committed(partition)
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == 11
    server.wait_event("authenticated", listener="SASL_SSL", mechanism="PLAIN",
                      principal="User:bob")


# --- a wrong password ------------------------------------------------------------------------
SCRAM_FAILED = ("Authentication failed during authentication due to invalid credentials with "
                "SASL mechanism SCRAM-SHA-256")


@pytest.mark.slow
def test_wrong_password_fails_with_each_clients_authentication_error(
        server: ServerProcess, certs: Certs, caplog: pytest.LogCaptureFixture) -> None:
    failures_before = server.count("failed authentication")
    # confluent-kafka: an _AUTHENTICATION error with the server's message
    errors: list[KafkaError] = []
    config = confluent_config(server, certs, "SASL_SSL", "SCRAM-SHA-256", password="wrong")
    admin = AdminClient({**config, "error_cb": errors.append,  # type: ignore[dict-item]
                         "reconnect.backoff.ms": 1000})
    with pytest.raises(Exception):  # noqa: B017  # no broker: a transport error
        admin.list_topics(timeout=2)
    admin.poll(0.5)  # serves error_cb
    del admin  # the traceback pytest keeps would keep it reconnecting
    auth_errors = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth_errors and SCRAM_FAILED in auth_errors[0].str()
    # aiokafka: SaslAuthenticationFailed (error 58) with the server's message, from the
    # connection (its client logs it and reports only that it could not bootstrap)
    config_aio = aiokafka_config(server, certs, "SASL_PLAINTEXT", "SCRAM-SHA-256",
                                 password="wrong")
    host, aio_port = config_aio.pop("bootstrap_servers").split(":")
    with pytest.raises(SaslAuthenticationFailed, match=SCRAM_FAILED):
        asyncio.run(create_conn(host, int(aio_port), request_timeout_ms=5000, **config_aio))
    # kafka-python: SaslAuthenticationFailedError (logged by its connection manager), then it
    # gives up bootstrapping; PLAIN's message is Kafka's "Invalid username or password"
    with caplog.at_level(logging.ERROR, logger="kafka"), pytest.raises(KafkaTimeoutError):
        KafkaAdminClient(**kafka_python_config(server, certs, "SASL_PLAINTEXT", "PLAIN",
                                               password="wrong"), bootstrap_timeout_ms=1500)
    assert "Authentication failed: Invalid username or password" in caplog.text
    assert "SaslAuthenticationFailedError" in caplog.text
    # the server logged each failure and goes on serving others
    assert server.count("failed authentication") >= failures_before + 3
    event = server.wait_event("failed authentication", mechanism="SCRAM-SHA-256")
    assert SCRAM_FAILED in event["reason"]
    assert server.alive()
    assert metadata_confluent(confluent_config(server, certs, "SASL_SSL", "SCRAM-SHA-256"))


# --- TLS without SASL --------------------------------------------------------------------------
def test_ssl_listener_without_sasl_serves_every_client(server: ServerProcess,
                                                       certs: Certs) -> None:
    expected = ("127.0.0.1", port(server, "SSL"))
    assert metadata_confluent(confluent_config(server, certs, "SSL")) == {1: expected}
    assert TOPIC in metadata_kafka_python(kafka_python_config(server, certs, "SSL"))
    assert asyncio.run(metadata_aiokafka(aiokafka_config(server, certs, "SSL"))) == [expected]


def test_client_certificates_on_a_listener_that_requires_them(server: ServerProcess,
                                                              certs: Certs) -> None:
    expected = ("127.0.0.1", port(server, "MTLS"))
    assert metadata_confluent(confluent_config(server, certs, "MTLS")) == {1: expected}
    assert asyncio.run(metadata_aiokafka(aiokafka_config(server, certs, "MTLS"))) == [expected]
    # the principal is the certificate's subject, as Kafka's default principal builder makes it
    login = server.wait_event("authenticated", listener="MTLS", mechanism="SSL")
    assert login["principal"].startswith("User:CN=client,")
    # without a certificate the handshake fails, and the server says so
    no_cert = {**confluent_config(server, certs, "SSL"),
               "bootstrap.servers": f"127.0.0.1:{port(server, 'MTLS')}"}
    with pytest.raises(Exception):  # noqa: B017
        AdminClient(no_cert).list_topics(timeout=1.5)
    wait_until(lambda: any("SSL handshake failed" in e.get("reason", "")
                           for e in server.events if e.get("event") == "failed authentication"),
               message="the failed TLS handshake to be logged")


def test_plaintext_listener_still_serves_anonymous_clients(server: ServerProcess,
                                                           certs: Certs) -> None:
    assert metadata_confluent(confluent_config(server, certs, "PLAINTEXT")) == {
        1: ("127.0.0.1", port(server, "PLAINTEXT"))}
