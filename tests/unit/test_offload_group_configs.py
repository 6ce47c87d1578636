"""Per-group configs: Kafka's GroupConfig validation, IncrementalAlterConfigs' operations, the
metadata's configs as the shards read them (and an older store's 1001 records under them), and
configs outliving the group."""

from __future__ import annotations

import re

import pytest

from coordinator.apis.group_resource_configs import APPEND, DELETE, SET, altered, replaced
from coordinator.config import ServerConfig
from coordinator.groups.admin import delete_group
from coordinator.groups.common import group_configs
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.metadata import config_resources
from coordinator.metadata.config_resources import GROUP
from coordinator.metadata.topic_configs import AlterError
from coordinator.runtime import Result
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from protocol import ErrorCode
from storage.records import ConfigRecordKey, GroupConfigKey, GroupConfigValue

BROKER = ServerConfig.from_sources({})
Op = tuple[str, int, str | None]


def error_of(ctx: ConsumerGroupContext, *ops: Op) -> tuple[int, str]:
    with pytest.raises(AlterError) as info:
        alter(ctx, *ops)
    return info.value.code, info.value.message


def alter(ctx: ConsumerGroupContext, *ops: Op, group_id: str = "g") -> None:
    """What IncrementalAlterConfigs leaves in the metadata."""
    old = ctx.group_configs.configs(GROUP, group_id)
    ctx.set_group_configs(group_id, altered(old, list(ops), BROKER))


@pytest.mark.parametrize(("name", "value", "message"), [
    ("consumer.session.timeout.ms", "1000",
     "consumer.session.timeout.ms must be greater than or equal to "
     "group.consumer.min.session.timeout.ms"),
    ("consumer.session.timeout.ms", "70000",
     "consumer.session.timeout.ms must be less than or equal to "
     "group.consumer.max.session.timeout.ms"),
    ("consumer.heartbeat.interval.ms", "16000",
     "consumer.heartbeat.interval.ms must be less than or equal to "
     "group.consumer.max.heartbeat.interval.ms"),
    ("consumer.assignment.interval.ms", "15001",
     "consumer.assignment.interval.ms must be less than or equal to "
     "group.consumer.max.assignment.interval.ms"),
    ("consumer.assignment.interval.ms", "-2",
     "consumer.assignment.interval.ms must be greater than or equal to "
     "group.consumer.min.assignment.interval.ms"),
    ("consumer.assignment.interval.ms", "soon",
     "Invalid value soon for configuration consumer.assignment.interval.ms: Not a number of "
     "type INT"),
    ("consumer.assignor.offload.enable", "yes",
     "Invalid value yes for configuration consumer.assignor.offload.enable: Expected value to "
     "be either true or false"),
    ("streams.assignment.interval.ms", "20000",
     "streams.assignment.interval.ms must be less than or equal to "
     "group.streams.max.assignment.interval.ms"),
    ("no.such.config", "1", "Unknown group config name: no.such.config"),
])
def test_invalid_values_are_refused_with_kafkas_message(name: str, value: str,
                                                        message: str) -> None:
    ctx = ConsumerGroupContext()
    assert error_of(ctx, (name, SET, value)) == (ErrorCode.invalid_config, message)


def test_heartbeat_must_stay_below_session() -> None:
    config = ServerConfig.from_sources({"group.consumer.max.heartbeat.interval.ms": "60000"})
    with pytest.raises(group_configs.GroupConfigError, match=re.escape(
                       "must be less than consumer.session.timeout.ms")):
        group_configs.validate({"consumer.heartbeat.interval.ms": "50000"}, config)


def test_append_is_not_allowed_and_minus_1_is_valid() -> None:
    ctx = ConsumerGroupContext()
    code, message = error_of(ctx, ("consumer.assignment.interval.ms", APPEND, "1"))
    assert code == ErrorCode.invalid_config and "append is not allowed" in message
    alter(ctx, ("consumer.assignment.interval.ms", SET, "-1"))
    assert group_configs.overrides(ctx.shard, "g") == {"consumer.assignment.interval.ms": "-1"}


def test_set_delete_and_what_the_shard_reads() -> None:
    ctx = ConsumerGroupContext()
    alter(ctx, ("consumer.assignment.interval.ms", SET, "2000"),
          ("consumer.assignor.offload.enable", SET, "false"))
    assert group_configs.overrides(ctx.shard, "g") == {
        "consumer.assignment.interval.ms": "2000", "consumer.assignor.offload.enable": "false"}
    overrides = group_configs.consumer_overrides(ctx.shard, "g")
    assert (overrides.assignment_interval_ms, overrides.assignor_offload) == (2000, False)
    assert group_configs.consumer_overrides(ctx.shard, "g") is overrides  # parsed once
    alter(ctx, ("consumer.assignor.offload.enable", DELETE, None))
    assert group_configs.overrides(ctx.shard, "g") == {"consumer.assignment.interval.ms": "2000"}
    assert group_configs.consumer_overrides(ctx.shard, "g").assignor_offload is None
    alter(ctx, ("consumer.assignment.interval.ms", DELETE, None))
    assert group_configs.overrides(ctx.shard, "g") == {}
    assert ctx.group_configs.names(GROUP) == []  # no override left: nothing kept
    assert ctx.written == []  # nothing on the coordinator partition


def test_alter_configs_replaces_the_overrides_as_a_whole() -> None:
    assert replaced([("consumer.heartbeat.interval.ms", "6000")], BROKER) == {
        "consumer.heartbeat.interval.ms": "6000"}
    assert replaced([], BROKER) == {}
    for configs, code, message in (
            ([("consumer.heartbeat.interval.ms", None)], ErrorCode.invalid_request,
             "Null value not supported for : consumer.heartbeat.interval.ms"),
            ([("a.b", "1"), ("a.b", "2")], ErrorCode.invalid_request,
             "Error due to duplicate config keys"),
            ([("no.such.config", "1")], ErrorCode.invalid_config,
             "Unknown group config name: no.such.config")):
        with pytest.raises(AlterError) as info:
            replaced(configs, BROKER)
        assert (info.value.code, info.value.message) == (code, message)


def test_configs_are_config_records_of_the_group_resource() -> None:
    found = config_resources.records(GROUP, "g", {"a": "1", "b": "2"}, {"b": "3"})
    assert [(k.resource_type, k.resource_name, k.name, v and v.value) for k, v in found] == [
        (32, "g", "a", None), (32, "g", "b", "3")]
    assert found[0][0].TYPE_ID == ConfigRecordKey.TYPE_ID == 1012


def test_configs_outlive_the_group() -> None:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0))
    ctx.create_topic("t", 2)
    alter(ctx, ("consumer.heartbeat.interval.ms", SET, "7000"))
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=-1)
    ctx.apply(delete_group(ctx.shard, "g"))
    assert "g" not in ctx.shard.groups
    assert group_configs.overrides(ctx.shard, "g") == {"consumer.heartbeat.interval.ms": "7000"}
    assert ctx.heartbeat(member_id="b", topics=["t"]).heartbeat_interval_ms == 7000


def test_configs_set_before_the_group_exists_govern_its_first_member() -> None:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0))
    ctx.create_topic("t", 2)
    alter(ctx, ("consumer.heartbeat.interval.ms", SET, "6000"), group_id="later")
    assert ctx.heartbeat("later", "a", 0, topics=["t"]).heartbeat_interval_ms == 6000
    alter(ctx, ("consumer.heartbeat.interval.ms", SET, "8000"), group_id="later")
    member = ctx.member("a", "later")
    assert ctx.heartbeat("later", "a", member.member_epoch).heartbeat_interval_ms == 8000


def test_an_older_stores_1001_configs_are_read_under_the_metadatas() -> None:
    ctx = ConsumerGroupContext()
    ctx.apply(Result([(GroupConfigKey(group_id="g"), GroupConfigValue(configs={
        "consumer.heartbeat.interval.ms": "6000", "consumer.session.timeout.ms": "50000"}))]))
    assert group_configs.consumer_overrides(ctx.shard, "g").heartbeat_interval_ms == 6000
    alter(ctx, ("consumer.heartbeat.interval.ms", SET, "7000"))  # set while it loaded: newer
    overrides = group_configs.consumer_overrides(ctx.shard, "g")
    assert (overrides.heartbeat_interval_ms, overrides.session_timeout_ms) == (7000, 50000)
    ctx.apply(Result([group_configs.legacy_tombstone("g")]))  # migrated
    assert ctx.shard.legacy_group_configs == {}
    assert group_configs.overrides(ctx.shard, "g") == {"consumer.heartbeat.interval.ms": "7000"}


def test_every_group_config_has_a_default() -> None:
    names = group_configs.GROUP_CONFIG_NAMES
    assert {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
            "consumer.assignment.interval.ms", "consumer.assignor.offload.enable",
            "share.assignment.interval.ms", "streams.assignor.offload.enable"} <= set(names)
    assert group_configs.default_value("consumer.assignment.interval.ms", BROKER) == -1
    assert group_configs.default_value("consumer.session.timeout.ms", BROKER) == 45000
    assert group_configs.default_value("consumer.assignor.offload.enable", BROKER) is None
