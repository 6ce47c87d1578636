"""TOPIC and BROKER configs through kafka-python's KafkaAdminClient: alter_configs both ways
(IncrementalAlterConfigs, and the legacy AlterConfigs with the client filling in the other
overrides), reset_configs, describe_configs with synonyms."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

from tests.harness import ServerProcess
from tests.integration.test_admin_kafka_python import spec, unique


@pytest.fixture(scope="module")
def admin(shared_server: ServerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=shared_server.bootstrap,
                              request_timeout_ms=10000, client_id="kp-configs-test")
    try:
        yield client
    finally:
        client.close()


def new_topic(admin: KafkaAdminClient) -> str:
    name = unique("kp-cfg")
    admin.create_topics({name: spec(1)})
    return name


def topic(name: str, configs: dict | None = None) -> ConfigResource:
    return ConfigResource(ConfigResourceType.TOPIC, name, configs=configs)


def described(admin: KafkaAdminClient, name: str, synonyms: bool = False) -> dict:
    return admin.describe_configs([topic(name)], include_synonyms=synonyms,
                                  config_filter="all")["topic"][name]


@pytest.mark.slow
@pytest.mark.parametrize("incremental", [True, False])
def test_alter_then_describe(admin: KafkaAdminClient, incremental: bool) -> None:
    name = new_topic(admin)
    result = admin.alter_configs([topic(name, {"retention.ms": "3600000"})],
                                 incremental=incremental)
    assert result == {"topic": {name: "OK"}}
    # the legacy API replaces all overrides: the client sends the others it reads back
    result = admin.alter_configs([topic(name, {"segment.bytes": "1048576"})],
                                 incremental=incremental)
    assert result == {"topic": {name: "OK"}}
    configs = described(admin, name, synonyms=True)
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert [(s["name"], s["source"]) for s in configs["retention.ms"]["synonyms"]] == [
        ("retention.ms", "DYNAMIC_TOPIC_CONFIG"), ("log.retention.ms", "DEFAULT_CONFIG")]
    assert configs["segment.bytes"]["value"] == "1048576"
    admin.reset_configs([topic(name, {"retention.ms": None})], incremental=incremental)
    configs = described(admin, name)
    assert configs["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert configs["segment.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"


def test_append_and_bad_value(admin: KafkaAdminClient) -> None:
    name = new_topic(admin)
    admin.alter_configs([topic(name, {"cleanup.policy": (AlterConfigOp.APPEND, "compact")})])
    assert described(admin, name)["cleanup.policy"]["value"] == "delete,compact"
    result = admin.alter_configs([topic(name, {"max.message.bytes": "-5"})])
    assert result["topic"][name].startswith("[Error 40] InvalidConfigurationError")
    assert "Invalid value -5 for configuration max.message.bytes" in result["topic"][name]


def test_broker_config_is_not_dynamic(admin: KafkaAdminClient) -> None:
    resource = ConfigResource(ConfigResourceType.BROKER, "1", {"num.partitions": "3"})
    result = admin.alter_configs([resource], raise_on_unknown=False)
    assert "InvalidRequestError" in result["broker"]["1"]
    assert "Cannot update these configs dynamically: Set(num.partitions)" in result["broker"]["1"]
