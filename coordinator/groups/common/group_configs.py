"""Per-group configs (Kafka's ``GroupConfig``, plus seed 000's assignment interval and offload).

Overrides are cluster metadata, as in Kafka: ``ConfigRecord``s of GROUP resources in
``__cluster_metadata-0``, replayed into the metadata image's config resources
(``coordinator/metadata/config_resources.py``), whatever state the group's coordinator
partition is in, whether the group exists or not; deleting a group keeps them (KIP-848). Every
shard reads them through ``shard.group_configs`` (the image's GROUP resources, Kafka's
``GroupConfigManager``), so a group sees its configs from its first request and every change
at its next. ``validate`` is Kafka's ``GroupConfig.validate``: names must be known, values
parse, and the bounded ones stay within the broker's min/max. A key is one row of
``_BROKER_DEFAULTS`` (its type, the broker config it defaults to or a fixed default), plus a
``_ONE_OF`` row if it takes one of a few strings.

Stores written before (our ``GroupConfig`` records, type 1001, on the group's coordinator
partition) are still replayed, into ``shard.legacy_group_configs``, read under the metadata's
configs until ``coordinator/groups/legacy_configs.py`` has migrated them to ConfigRecords.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from coordinator.config import ConfigDef
from coordinator.config.model import ConfigError, ConfigType
from coordinator.runtime.result import Record
from storage.records import GroupConfigKey, GroupConfigValue

GROUP = 32
"""Kafka's ``ConfigResource.Type.GROUP``: the group configs' resource type."""

INT, BOOL, STRING = ConfigType.INT, ConfigType.BOOLEAN, ConfigType.STRING

# Group config name -> (type, broker config it defaults to, or a fixed default).
_BROKER_DEFAULTS: dict[str, tuple[ConfigType, str | None, Any]] = {
    "consumer.session.timeout.ms": (INT, "group.consumer.session.timeout.ms", None),
    "consumer.heartbeat.interval.ms": (INT, "group.consumer.heartbeat.interval.ms", None),
    "consumer.assignment.interval.ms": (INT, None, -1),
    "consumer.assignor.offload.enable": (BOOL, None, None),
    "consumer.scheduled.rebalance.max.delay.ms": (
        INT, "group.consumer.scheduled.rebalance.max.delay.ms", None),
    "consumer.assignment.max.moves": (INT, "group.consumer.assignment.max.moves", None),
    "share.session.timeout.ms": (INT, "group.share.session.timeout.ms", None),
    "share.heartbeat.interval.ms": (INT, "group.share.heartbeat.interval.ms", None),
    "share.record.lock.duration.ms": (INT, "group.share.record.lock.duration.ms", None),
    "share.delivery.count.limit": (INT, "group.share.delivery.count.limit", None),
    "share.partition.max.record.locks": (INT, "group.share.partition.max.record.locks", None),
    "share.auto.offset.reset": (STRING, None, "latest"),
    "share.isolation.level": (STRING, None, "read_uncommitted"),
    "share.assignment.interval.ms": (INT, None, -1),
    "share.assignor.offload.enable": (BOOL, None, None),
    "streams.session.timeout.ms": (INT, "group.streams.session.timeout.ms", None),
    "streams.heartbeat.interval.ms": (INT, "group.streams.heartbeat.interval.ms", None),
    "streams.num.standby.replicas": (INT, "group.streams.num.standby.replicas", None),
    "streams.initial.rebalance.delay.ms": (INT, "group.streams.initial.rebalance.delay.ms",
                                           None),
    "streams.assignment.interval.ms": (INT, None, -1),
    "streams.assignor.offload.enable": (BOOL, None, None),
    "streams.scheduled.rebalance.max.delay.ms": (
        INT, "group.streams.scheduled.rebalance.max.delay.ms", None),
    "streams.assignment.max.moves": (INT, "group.streams.assignment.max.moves", None),
}

_DOCS = {
    "session.timeout.ms": "The timeout to detect client failures when using the {} group "
                          "protocol.",
    "heartbeat.interval.ms": "The heartbeat interval given to the members of a {} group.",
    "assignment.interval.ms": "The interval between assignment updates for a {} group; -1 "
                              "uses the broker's group.{}.assignment.interval.ms.",
    "assignor.offload.enable": "Whether to offload {} group assignment to a group coordinator "
                               "background thread; not set uses the broker's "
                               "group.{}.assignor.offload.enable.",
    "scheduled.rebalance.max.delay.ms": "How long the partitions of a {} group member that "
                                        "left are held for it before they are spread (0: "
                                        "at once).",
    "assignment.max.moves": "The most partitions a {} group's new target moves away from "
                            "members that have them (0: unbounded).",
}

_ONE_OF = {"share.auto.offset.reset": ("latest", "earliest"),
           "share.isolation.level": ("read_committed", "read_uncommitted")}

GROUP_CONFIG_NAMES: tuple[str, ...] = tuple(_BROKER_DEFAULTS)


class GroupConfigError(ValueError):
    """INVALID_CONFIG, with Kafka's message."""


def definition(name: str) -> ConfigDef:
    kind, _, rest = name.partition(".")
    doc = _DOCS.get(rest, "The group's {} config " + rest + ".").format(kind, kind)
    config_type = _BROKER_DEFAULTS[name][0]
    return ConfigDef(name, config_type, _BROKER_DEFAULTS[name][2], doc,
                     one_of=_ONE_OF.get(name, ()))


def default_value(name: str, broker_config: Any) -> Any:
    _, broker_key, fixed = _BROKER_DEFAULTS[name]
    return broker_config[broker_key] if broker_key is not None else fixed


def validate(overrides: Mapping[str, str], broker_config: Any) -> dict[str, Any]:
    """The parsed overrides, or ``GroupConfigError`` (Kafka's ``GroupConfig.validate``)."""
    parsed: dict[str, Any] = {}
    for name, raw in overrides.items():
        if name not in _BROKER_DEFAULTS:
            raise GroupConfigError(f"Unknown group config name: {name}")
        try:
            parsed[name] = definition(name).parse(raw)
        except ConfigError as exc:
            raise GroupConfigError(str(exc)) from None
    effective = {name: parsed.get(name, default_value(name, broker_config))
                 for name in _BROKER_DEFAULTS}
    for kind in ("consumer", "share", "streams"):
        session = effective[f"{kind}.session.timeout.ms"]
        heartbeat = effective[f"{kind}.heartbeat.interval.ms"]
        for what, value in (("heartbeat.interval.ms", heartbeat),
                            ("session.timeout.ms", session)):
            _bounded(f"{kind}.{what}", value, broker_config, f"group.{kind}.min.{what}",
                     f"group.{kind}.max.{what}")
        if heartbeat >= session:
            raise GroupConfigError(f"{kind}.heartbeat.interval.ms must be less than "
                                   f"{kind}.session.timeout.ms")
        interval = effective[f"{kind}.assignment.interval.ms"]
        if interval != -1:
            _bounded(f"{kind}.assignment.interval.ms", interval, broker_config,
                     f"group.{kind}.min.assignment.interval.ms",
                     f"group.{kind}.max.assignment.interval.ms")
    for name, broker_name in (("share.record.lock.duration.ms", "record.lock.duration.ms"),
                              ("share.delivery.count.limit", "delivery.count.limit"),
                              ("share.partition.max.record.locks",
                               "partition.max.record.locks")):
        _bounded(name, effective[name], broker_config, f"group.share.min.{broker_name}",
                 f"group.share.max.{broker_name}")
    for name in ("consumer.scheduled.rebalance.max.delay.ms", "consumer.assignment.max.moves",
                 "streams.scheduled.rebalance.max.delay.ms", "streams.assignment.max.moves"):
        if effective[name] < 0:
            raise GroupConfigError(f"{name} must be greater than or equal to 0")
    standby = effective["streams.num.standby.replicas"]
    maximum = broker_config["group.streams.max.standby.replicas"]
    if not 0 <= standby <= maximum:
        raise GroupConfigError("streams.num.standby.replicas must be less than or equal to "
                               "group.streams.max.standby.replicas")
    if effective["streams.initial.rebalance.delay.ms"] < 0:
        raise GroupConfigError("streams.initial.rebalance.delay.ms must be greater than or "
                               "equal to 0")
    return parsed


def _bounded(name: str, value: int, config: Any, low_key: str, high_key: str) -> None:
    if value < config[low_key]:
        raise GroupConfigError(f"{name} must be greater than or equal to {low_key}")
    if value > config[high_key]:
        raise GroupConfigError(f"{name} must be less than or equal to {high_key}")


# ------------------------------------------------------------------------------ the shard
_NONE: Mapping[str, str] = {}


def overrides(shard: Any, group_id: str) -> Mapping[str, str]:
    """The group's overrides as stored (name -> value text); empty when it has none."""
    stored, legacy = _sources(shard, group_id)
    return stored if legacy is None else {**legacy, **stored}


def _sources(shard: Any, group_id: str) -> tuple[Mapping[str, str], Mapping[str, str] | None]:
    """The metadata's configs of the group, and those a 1001 record of the shard's partition
    holds until they are migrated (a config the metadata has is newer)."""
    return (shard.group_configs.get(group_id, _NONE),
            shard.legacy_group_configs.get(group_id))


def legacy_tombstone(group_id: str) -> Record:
    """What ends a migrated 1001 record: its tombstone."""
    return (GroupConfigKey(group_id=group_id), None)


def replay(shard: Any, offset: int, key: GroupConfigKey, value: GroupConfigValue | None
            ) -> None:
    """A 1001 record (written before group configs were cluster metadata): kept for the
    migration."""
    legacy = shard.legacy_group_configs
    if value is None or not value.configs:
        legacy.pop(key.group_id, None)
    else:
        legacy[key.group_id] = dict(value.configs)


# ------------------------------------------------------------------------------ per group type
@dataclass(frozen=True, slots=True)
class ModernGroupOverrides:
    """What a consumer, share or streams group may override of its type's broker configs
    (``<type>.session.timeout.ms``, ``<type>.heartbeat.interval.ms``,
    ``<type>.assignment.interval.ms``, ``<type>.assignor.offload.enable``); None means the
    broker's value."""

    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None
    assignment_interval_ms: int | None = None
    assignor_offload: bool | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupOverrides(ModernGroupOverrides):
    """What a consumer group overrides; None means the broker's value."""

    scheduled_rebalance_max_delay_ms: int | None = None
    assignment_max_moves: int | None = None


@dataclass(frozen=True, slots=True)
class ShareGroupOverrides(ModernGroupOverrides):
    """What a share group overrides; None means the broker's value (``share.auto.offset.reset``
    and ``share.isolation.level`` have fixed defaults, as in Kafka)."""

    record_lock_duration_ms: int | None = None
    delivery_count_limit: int | None = None
    partition_max_record_locks: int | None = None
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"


@dataclass(frozen=True, slots=True)
class StreamsGroupOverrides(ModernGroupOverrides):
    """What a streams group overrides; None means the broker's value."""

    num_standby_replicas: int | None = None
    initial_rebalance_delay_ms: int | None = None
    scheduled_rebalance_max_delay_ms: int | None = None
    assignment_max_moves: int | None = None


_NO_CONSUMER_OVERRIDES = ConsumerGroupOverrides()
_NO_STREAMS_OVERRIDES = StreamsGroupOverrides()
_NO_SHARE_OVERRIDES = ShareGroupOverrides()


def consumer_overrides(shard: Any, group_id: str) -> ConsumerGroupOverrides:
    """The group's overrides, parsed once per version of its configs (every heartbeat
    asks)."""
    return _cached(shard, group_id, "consumer_overrides_cache", _parse_consumer_overrides,
                   _NO_CONSUMER_OVERRIDES)


def share_overrides(shard: Any, group_id: str) -> ShareGroupOverrides:
    """The share group's overrides, parsed once per stored version."""
    return _cached(shard, group_id, "share_overrides_cache", _parse_share_overrides,
                   _NO_SHARE_OVERRIDES)


def streams_overrides(shard: Any, group_id: str) -> StreamsGroupOverrides:
    """The streams group's overrides, parsed once per stored version."""
    return _cached(shard, group_id, "streams_overrides_cache", _parse_streams_overrides,
                   _NO_STREAMS_OVERRIDES)


T = TypeVar("T")


def _cached(shard: Any, group_id: str, cache_name: str,
            parse: Callable[[Mapping[str, str]], T], none: T) -> T:
    stored, legacy = _sources(shard, group_id)
    if not stored and not legacy:
        return none
    cache: dict[str, tuple[Mapping[str, str], Mapping[str, str] | None, T]] = \
        shard.__dict__.setdefault(cache_name, {})
    cached = cache.get(group_id)
    if cached is not None and cached[0] is stored and cached[1] is legacy:
        return cached[2]
    parsed_overrides = parse(stored if legacy is None else {**legacy, **stored})
    cache[group_id] = (stored, legacy, parsed_overrides)
    return parsed_overrides


def _parser(stored: Mapping[str, str]) -> Callable[[str], Any]:
    def parsed(name: str) -> Any:
        raw = stored.get(name)
        if raw is None:
            return None
        try:
            return definition(name).parse(raw)
        except ConfigError:
            return None  # written by a build with other rules: fall back to the broker's

    return parsed


def _modern_overrides(parsed: Callable[[str], Any], kind: str) -> dict[str, Any]:
    """The ``ModernGroupOverrides`` fields of a ``kind`` group (an assignment interval of -1
    is the broker's)."""
    interval = parsed(f"{kind}.assignment.interval.ms")
    return {"session_timeout_ms": parsed(f"{kind}.session.timeout.ms"),
            "heartbeat_interval_ms": parsed(f"{kind}.heartbeat.interval.ms"),
            "assignment_interval_ms": None if interval is None or interval == -1 else interval,
            "assignor_offload": parsed(f"{kind}.assignor.offload.enable")}


def _parse_consumer_overrides(stored: Mapping[str, str]) -> ConsumerGroupOverrides:
    parsed = _parser(stored)
    return ConsumerGroupOverrides(
        **_modern_overrides(parsed, "consumer"),
        scheduled_rebalance_max_delay_ms=parsed("consumer.scheduled.rebalance.max.delay.ms"),
        assignment_max_moves=parsed("consumer.assignment.max.moves"))


def _parse_share_overrides(stored: Mapping[str, str]) -> ShareGroupOverrides:
    parsed = _parser(stored)
    return ShareGroupOverrides(
        **_modern_overrides(parsed, "share"),
        record_lock_duration_ms=parsed("share.record.lock.duration.ms"),
        delivery_count_limit=parsed("share.delivery.count.limit"),
        partition_max_record_locks=parsed("share.partition.max.record.locks"),
        auto_offset_reset=parsed("share.auto.offset.reset") or "latest",
        isolation_level=parsed("share.isolation.level") or "read_uncommitted")


def _parse_streams_overrides(stored: Mapping[str, str]) -> StreamsGroupOverrides:
    parsed = _parser(stored)
    return StreamsGroupOverrides(
        **_modern_overrides(parsed, "streams"),
        num_standby_replicas=parsed("streams.num.standby.replicas"),
        initial_rebalance_delay_ms=parsed("streams.initial.rebalance.delay.ms"),
        scheduled_rebalance_max_delay_ms=parsed("streams.scheduled.rebalance.max.delay.ms"),
        assignment_max_moves=parsed("streams.assignment.max.moves"))
