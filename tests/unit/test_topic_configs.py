"""Topic configs as Kafka resolves them (override, broker synonym, default) and its
IncrementalAlterConfigs operations on a topic's overrides."""

from __future__ import annotations

import pytest

from coordinator.config import ServerConfig
from coordinator.config.definitions import TOPIC_CONFIGS_BY_NAME
from coordinator.metadata import topic_configs
from coordinator.metadata.topic_configs import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    AlterError,
    ConfigSource,
    Synonym,
    effective,
    incremental,
    legacy,
    synonyms,
)
from protocol import ErrorCode

DEFAULTS = ServerConfig.from_sources({})
STATIC = ServerConfig.from_sources({"log.retention.ms": "1000", "message.max.bytes": "500"})


def chain(name: str, overrides: dict[str, str], config: ServerConfig) -> list[Synonym]:
    return synonyms(TOPIC_CONFIGS_BY_NAME[name], overrides, config)


def test_a_config_without_a_broker_synonym_is_override_then_default() -> None:
    assert chain("cleanup.policy", {}, STATIC) == [
        Synonym("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)]
    assert chain("cleanup.policy", {"cleanup.policy": "compact"}, STATIC) == [
        Synonym("cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        Synonym("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)]


def test_the_broker_synonym_supplies_the_default() -> None:
    assert chain("retention.ms", {}, DEFAULTS) == [
        Synonym("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)]
    assert chain("retention.ms", {"retention.ms": "5"}, STATIC) == [
        Synonym("retention.ms", "5", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        Synonym("log.retention.ms", "1000", ConfigSource.STATIC_BROKER_CONFIG),
        Synonym("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)]


def test_effective_values_are_typed_and_follow_the_chain() -> None:
    assert effective("retention.ms", {}, STATIC) == 1000
    assert effective("max.message.bytes", {}, STATIC) == 500
    assert effective("max.message.bytes", {"max.message.bytes": "70"}, STATIC) == 70
    assert effective("retention.bytes", {}, STATIC) == -1
    assert effective("cleanup.policy", {"cleanup.policy": "compact,delete"}, STATIC) == [
        "compact", "delete"]
    # every topic config resolves, override or not
    for name in TOPIC_CONFIGS_BY_NAME:
        effective(name, {}, DEFAULTS)


def test_set_delete_append_subtract() -> None:
    current = {"retention.ms": "10", "segment.ms": "20"}
    assert incremental(current, [("retention.ms", SET, "30"), ("segment.ms", DELETE, None),
                                 ("flush.ms", DELETE, None)]) == {"retention.ms": "30"}
    assert current == {"retention.ms": "10", "segment.ms": "20"}  # not changed in place
    # APPEND starts from the default when there is no override, and adds no duplicate
    assert incremental({}, [("cleanup.policy", APPEND, "compact,delete")]) == {
        "cleanup.policy": "delete,compact"}
    assert incremental({"cleanup.policy": "delete,compact"},
                       [("cleanup.policy", SUBTRACT, "delete,nothing")]) == {
        "cleanup.policy": "compact"}
    assert incremental({}, [("cleanup.policy", SUBTRACT, "delete")]) == {"cleanup.policy": ""}


@pytest.mark.parametrize(("ops", "code", "message"), [
    ([("retention.ms", APPEND, "1")], ErrorCode.invalid_config,
     "Can't APPEND to key retention.ms because its type is not LIST."),
    ([("no.such", SUBTRACT, "1")], ErrorCode.invalid_config,
     "Can't SUBTRACT to key no.such because its type is not LIST."),
    ([("retention.ms", SET, None)], ErrorCode.invalid_request,
     "Null value not supported for : retention.ms"),
    ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], ErrorCode.invalid_request,
     "Error due to duplicate config keys"),
    ([("retention.ms", 9, "1")], ErrorCode.invalid_request, "Unknown operations type 9"),
])
def test_refused_operations(ops: list[topic_configs.AlterOp], code: ErrorCode,
                            message: str) -> None:
    with pytest.raises(AlterError) as info:
        incremental({}, ops)
    assert (info.value.code, info.value.message) == (code, message)


def test_legacy_replaces_everything() -> None:
    assert legacy([("segment.ms", "5")]) == {"segment.ms": "5"}
    assert topic_configs.legacy_from([("segment.ms", "5")])({"retention.ms": "1"}) == {
        "segment.ms": "5"}
    with pytest.raises(AlterError):
        legacy([("segment.ms", None)])
