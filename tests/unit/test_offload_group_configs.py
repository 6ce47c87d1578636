"""Per-group configs: Kafka's GroupConfig validation, the IncrementalAlterConfigs write
handler, replay, and configs outliving the group."""

from __future__ import annotations

import re

import pytest

from coordinator.apis.incremental_alter_configs import APPEND, DELETE, SET, alter
from coordinator.config import ServerConfig
from coordinator.groups.admin import delete_group
from coordinator.groups.common import group_configs
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.runtime import CoordinatorError
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from protocol import ErrorCode

BROKER = ServerConfig.from_sources({})


def error_of(ctx: ConsumerGroupContext, *ops: tuple[str, int, str | None]) -> tuple[int, str]:
    with pytest.raises(CoordinatorError) as info:
        alter(ctx.shard, "g", list(ops), BROKER, validate_only=False)
    return info.value.code, info.value.message or ""


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
    result = alter(ctx.shard, "g", [("consumer.assignment.interval.ms", SET, "-1")], BROKER,
                   validate_only=False)
    assert len(result.records) == 1


def test_set_delete_replay_and_validate_only() -> None:
    ctx = ConsumerGroupContext()
    ctx.apply(alter(ctx.shard, "g", [("consumer.assignment.interval.ms", SET, "2000"),
                                     ("consumer.assignor.offload.enable", SET, "false")],
                    BROKER, validate_only=False))
    assert group_configs.overrides(ctx.shard, "g") == {
        "consumer.assignment.interval.ms": "2000", "consumer.assignor.offload.enable": "false"}
    overrides = group_configs.consumer_overrides(ctx.shard, "g")
    assert (overrides.assignment_interval_ms, overrides.assignor_offload) == (2000, False)
    assert alter(ctx.shard, "g", [("consumer.assignment.interval.ms", SET, "3000")], BROKER,
                 validate_only=True).records == ()
    ctx.apply(alter(ctx.shard, "g", [("consumer.assignor.offload.enable", DELETE, None)],
                    BROKER, validate_only=False))
    assert group_configs.overrides(ctx.shard, "g") == {"consumer.assignment.interval.ms": "2000"}
    ctx.apply(alter(ctx.shard, "g", [("consumer.assignment.interval.ms", DELETE, None)],
                    BROKER, validate_only=False))
    assert group_configs.overrides(ctx.shard, "g") == {}
    assert ctx.written[-1][1] is None  # no override left: a tombstone


def test_configs_outlive_the_group() -> None:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0))
    ctx.create_topic("t", 2)
    ctx.apply(alter(ctx.shard, "g", [("consumer.heartbeat.interval.ms", SET, "7000")],
                    BROKER, validate_only=False))
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="a", member_epoch=-1)
    ctx.apply(delete_group(ctx.shard, "g"))
    assert "g" not in ctx.shard.groups
    assert group_configs.overrides(ctx.shard, "g") == {"consumer.heartbeat.interval.ms": "7000"}
    assert ctx.heartbeat(member_id="b", topics=["t"]).heartbeat_interval_ms == 7000


def test_every_group_config_has_a_default() -> None:
    names = group_configs.GROUP_CONFIG_NAMES
    assert {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
            "consumer.assignment.interval.ms", "consumer.assignor.offload.enable",
            "share.assignment.interval.ms", "streams.assignor.offload.enable"} <= set(names)
    assert group_configs.default_value("consumer.assignment.interval.ms", BROKER) == -1
    assert group_configs.default_value("consumer.session.timeout.ms", BROKER) == 45000
    assert group_configs.default_value("consumer.assignor.offload.enable", BROKER) is None
