"""Creating, deleting and growing topics with Kafka's checks and error codes.

Shared by CreateTopics, DeleteTopics, CreatePartitions and Metadata's auto-creation.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coordinator.cluster import Cluster, ClusterError
from coordinator.cluster import state_file as cluster_state
from coordinator.config import ConfigError
from coordinator.config.definitions import TOPIC_CONFIGS_BY_NAME
from coordinator.observability.logs import get_logger
from protocol import ErrorCode

from .broker import Broker
from .image import TopicImage
from .log import topic_record
from .topic_names import INTERNAL_TOPICS, InvalidTopicName, validate_topic_name

log = get_logger("coordinator.topic_admin")

# Like Kafka's controller (10,000 records per user operation): one request cannot make more
# partitions than this, so a typo cannot stall the server building a huge topic.
MAX_NEW_PARTITIONS_PER_REQUEST = 10_000
_TOO_MANY = (f"Excessively large number of partitions per request (at most "
             f"{MAX_NEW_PARTITIONS_PER_REQUEST}).")


@dataclass(frozen=True, slots=True)
class TopicError(Exception):
    code: ErrorCode
    message: str | None = None


def _check_replication(broker: Broker, replication_factor: int) -> int:
    if replication_factor == -1:
        return int(broker.config["default.replication.factor"])
    if replication_factor <= 0:
        raise TopicError(ErrorCode.invalid_replication_factor,
                         "Replication factor must be larger than 0, or -1 to use the default "
                         "value.")
    cluster = broker.cluster
    if cluster is not None:
        try:
            cluster.check_replication(replication_factor)
        except ClusterError as exc:
            raise TopicError(ErrorCode.invalid_replication_factor, str(exc)) from None
        return replication_factor
    if replication_factor > 1:
        raise TopicError(
            ErrorCode.invalid_replication_factor,
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            "replication factor of "
            f"{replication_factor} cannot be reached because only 1 broker(s) are registered.",
        )
    return replication_factor


def _check_assignments(broker: Broker, assignments: Sequence[tuple[int, Sequence[int]]]) -> int:
    """Manual replica assignments must be partitions 0..n-1, each on this node only."""
    indexes = sorted(index for index, _ in assignments)
    if indexes != list(range(len(indexes))):
        raise TopicError(ErrorCode.invalid_replica_assignment,
                         "Partitions should be a consecutive 0-based integer sequence")
    for _, replicas in assignments:
        if not replicas:
            raise TopicError(ErrorCode.invalid_replica_assignment,
                             "The manual partition assignment includes an empty replica list.")
        if len(set(replicas)) != len(replicas):
            raise TopicError(ErrorCode.invalid_replica_assignment,
                             "The manual partition assignment includes duplicate replicas.")
        known = broker.cluster.brokers if broker.cluster is not None else (broker.node_id,)
        unknown = [r for r in replicas if r not in known]
        if unknown:
            raise TopicError(ErrorCode.invalid_replica_assignment,
                             "The manual partition assignment includes broker "
                             f"{unknown[0]}, but no such broker is registered.")
    return len(indexes)


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Known topic configs only, each parsed and bounds-checked; returns the stored strings."""
    result: dict[str, str] = {}
    for name, value in configs.items():
        definition = TOPIC_CONFIGS_BY_NAME.get(name)
        if definition is None:
            raise TopicError(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
        if value is None:
            raise TopicError(ErrorCode.invalid_config,
                             f"Null value not supported for topic configs: {name}")
        try:
            definition.parse(value)
        except ConfigError as exc:
            raise TopicError(ErrorCode.invalid_config, str(exc)) from None
        result[name] = value
    return result


async def create_topic(
    broker: Broker,
    name: str,
    num_partitions: int,
    replication_factor: int,
    assignments: Sequence[tuple[int, Sequence[int]]] = (),
    configs: Mapping[str, str | None] | None = None,
    validate_only: bool = False,
) -> tuple[TopicImage | None, int, int, dict[str, str]]:
    """Create (or just validate) a topic. Returns (topic or None if validate-only, partitions,
    replication factor, configs)."""
    try:
        validate_topic_name(name)
    except InvalidTopicName as exc:
        raise TopicError(ErrorCode.invalid_topic_exception, str(exc)) from None
    if broker.image.topic(name) is not None:
        raise TopicError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    if name in INTERNAL_TOPICS:  # deleted: still never a data topic
        raise TopicError(ErrorCode.invalid_request,
                         f"Creation of internal topic {name} is prohibited.")
    collision = broker.image.colliding_topic(name)
    if collision is not None:
        raise TopicError(ErrorCode.invalid_topic_exception,
                         f"Topic '{name}' collides with existing topic: {collision}")
    if assignments:
        if num_partitions != -1 or replication_factor != -1:
            raise TopicError(ErrorCode.invalid_request,
                             "Both numPartitions or replicationFactor and replicasAssignments "
                             "were set. Both cannot be used at the same time.")
        partitions = _check_assignments(broker, assignments)
        replication = len(assignments[0][1])
    else:
        if num_partitions == -1:
            partitions = int(broker.config["num.partitions"])
        elif num_partitions <= 0:
            raise TopicError(ErrorCode.invalid_partitions,
                             "Number of partitions was set to an invalid non-positive value.")
        else:
            partitions = num_partitions
        replication = _check_replication(broker, replication_factor)
    if partitions > MAX_NEW_PARTITIONS_PER_REQUEST:
        raise TopicError(ErrorCode.invalid_partitions, _TOO_MANY)
    stored = validate_topic_configs(configs or {})
    if validate_only:
        return None, partitions, replication, stored
    planned = TopicImage(name, uuid.uuid4(), partitions, stored)
    await _persist(broker, planned, deleted=False)
    topic = broker.image.create_topic(name, partitions, stored, planned.topic_id)
    if broker.cluster is not None:
        _place(broker, broker.cluster, name, replication, assignments)
    log.info("topic created", topic=name, topic_id=str(topic.topic_id), partitions=partitions)
    return topic, partitions, replication, stored


def _place(broker: Broker, cluster: Cluster, name: str, replication: int,
           assignments: Sequence[tuple[int, Sequence[int]]] = ()) -> None:
    """A new topic's replicas in the cluster (its replication factor, or the manual
    assignment), kept across restarts."""
    cluster.forget_topic(name)
    cluster.set_replication(name, replication)
    for index, replicas in assignments:
        cluster.assign(name, index, tuple(replicas))
    _save_cluster(broker, cluster, name)


def _save_cluster(broker: Broker, cluster: Cluster, topic: str) -> None:
    try:
        cluster_state.save(broker.config.log_dir, cluster)
    except OSError as exc:
        log.warning("cluster state not saved", topic=topic, error=str(exc))


async def _persist(broker: Broker, topic: TopicImage, deleted: bool) -> None:
    """Write the topic's record (a tombstone if deleted) durably before it takes effect."""
    key, value = topic_record(topic)
    try:
        await broker.metadata_log.write([(key, None if deleted else value)])
    except OSError as exc:
        log.error("topic change not persisted", topic=topic.name, error=str(exc))
        raise TopicError(ErrorCode.kafka_storage_error,
                         f"The topic change could not be written: {exc}") from None


async def add_partitions(broker: Broker, name: str, count: int,
                         assignments: Sequence[Sequence[int]] | None,
                         validate_only: bool = False) -> None:
    topic = broker.image.topic(name)
    if topic is None:
        raise TopicError(ErrorCode.unknown_topic_or_partition,
                         f"The topic '{name}' does not exist.")
    if count < topic.partitions:
        raise TopicError(ErrorCode.invalid_partitions,
                         f"Topic currently has {topic.partitions} partitions, which is higher "
                         f"than the requested {count}.")
    if count == topic.partitions:
        raise TopicError(ErrorCode.invalid_partitions,
                         f"Topic already has {topic.partitions} partitions.")
    if count - topic.partitions > MAX_NEW_PARTITIONS_PER_REQUEST:
        raise TopicError(ErrorCode.invalid_partitions, _TOO_MANY)
    if assignments is not None:
        added = count - topic.partitions
        if len(assignments) != added:
            raise TopicError(ErrorCode.invalid_replica_assignment,
                             f"Attempted to add {added} additional partition(s), but only "
                             f"{len(assignments)} assignment(s) were specified.")
        _check_assignments(broker, [(i, r) for i, r in enumerate(assignments)])
    if not validate_only:
        await _persist(broker, TopicImage(name, topic.topic_id, count, topic.configs), False)
        broker.image.add_partitions(name, count)
        log.info("partitions added", topic=name, partitions=count)


async def delete_topic(broker: Broker, name: str) -> TopicImage:
    if not broker.config["delete.topic.enable"]:
        raise TopicError(ErrorCode.topic_deletion_disabled, "Topic deletion is disabled.")
    topic = broker.image.topic(name)
    if topic is None:
        raise TopicError(ErrorCode.unknown_topic_or_partition,
                         "This server does not host this topic-partition.")
    await _persist(broker, topic, deleted=True)
    log.info("topic deleted", topic=name, topic_id=str(topic.topic_id))
    if broker.cluster is not None:
        broker.cluster.forget_topic(name)
        _save_cluster(broker, broker.cluster, name)
    return broker.image.delete_topic(name)


async def alter_topic_configs(broker: Broker, name: str, configs: Mapping[str, str | None],
                              validate_only: bool = False) -> dict[str, str]:
    """Replace a topic's config overrides (validated) durably in the metadata log; returns
    the stored overrides. The caller holds the metadata log's lock."""
    topic = broker.image.topic(name)
    if topic is None:
        raise TopicError(ErrorCode.unknown_topic_or_partition,
                         f"The topic '{name}' does not exist.")
    stored = validate_topic_configs(configs)
    if validate_only or stored == dict(topic.configs):
        return stored
    await _persist(broker, TopicImage(name, topic.topic_id, topic.partitions, stored), False)
    broker.image.set_configs(name, stored)
    log.info("topic configs altered", topic=name, configs=stored)
    return stored
