"""One module per Kafka API; ``build_registry`` puts them in the table ApiVersions advertises."""

from __future__ import annotations

from protocol import ApiKey

from . import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_share_group_offsets,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    consumer_group_install_assignment,
    consumer_group_prepare_assignment,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_share_group_offsets,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_share_group_offsets,
    describe_transactions,
    describe_user_scram_credentials,
    end_txn,
    fetch,
    find_coordinator,
    get_telemetry_subscriptions,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    push_telemetry,
    sasl_authenticate,
    sasl_handshake,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    streams_group_describe,
    streams_group_heartbeat,
    sync_group,
    txn_offset_commit,
)
from .context import RequestContext
from .registry import ApiRegistry, ApiSpec

__all__ = ["ApiRegistry", "ApiSpec", "RequestContext", "build_registry"]


def build_registry(legacy_versions: bool = True, client_assignors: bool = False) -> ApiRegistry:
    """``legacy_versions``: serve the versions Kafka 4.0 removed, as Kafka 3.9 did
    (``legacy.request.versions.enable``); False refuses them as Kafka 4.x does.
    ``client_assignors``: serve the KIP-848 draft's client-side assignor APIs
    (``group.consumer.client.assignors.enable``)."""
    registry = ApiRegistry(legacy_versions)
    registry.register(ApiKey.API_VERSIONS, 0, 4, api_versions.make_handler(registry))
    registry.register(ApiKey.METADATA, 0, 13, metadata.handle)
    registry.register(ApiKey.FIND_COORDINATOR, 0, 6, find_coordinator.handle)
    registry.register(ApiKey.CREATE_TOPICS, 2, 7, create_topics.handle)
    registry.register(ApiKey.DELETE_TOPICS, 1, 6, delete_topics.handle)
    registry.register(ApiKey.CREATE_PARTITIONS, 0, 3, create_partitions.handle)
    registry.register(ApiKey.DELETE_RECORDS, 0, 2, delete_records.handle)
    registry.register(ApiKey.DESCRIBE_LOG_DIRS, 1, 5, describe_log_dirs.handle)
    registry.register(ApiKey.DESCRIBE_PRODUCERS, 0, 0, describe_producers.handle)
    registry.register(ApiKey.DESCRIBE_CLUSTER, 0, 2, describe_cluster.handle)
    registry.register(ApiKey.DESCRIBE_CONFIGS, 1, 4, describe_configs.handle)
    registry.register(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, incremental_alter_configs.handle)
    registry.register(ApiKey.ALTER_CONFIGS, 0, 2, alter_configs.handle)
    registry.register(ApiKey.DESCRIBE_ACLS, 1, 3, describe_acls.handle)
    registry.register(ApiKey.CREATE_ACLS, 1, 3, create_acls.handle)
    registry.register(ApiKey.DELETE_ACLS, 1, 3, delete_acls.handle)
    registry.register(ApiKey.OFFSET_COMMIT, 2, 10, offset_commit.handle)
    registry.register(ApiKey.OFFSET_FETCH, 1, 10, offset_fetch.handle)
    registry.register(ApiKey.PRODUCE, 3, 11, produce.handle)
    registry.register(ApiKey.FETCH, 4, 16, fetch.handle)
    registry.register(ApiKey.LIST_OFFSETS, 1, 9, list_offsets.handle)
    registry.register(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, offset_for_leader_epoch.handle)
    registry.register(ApiKey.INIT_PRODUCER_ID, 0, 5, init_producer_id.handle)
    registry.register(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 3, add_partitions_to_txn.handle)
    registry.register(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, add_offsets_to_txn.handle)
    registry.register(ApiKey.END_TXN, 0, 4, end_txn.handle)
    registry.register(ApiKey.TXN_OFFSET_COMMIT, 0, 4, txn_offset_commit.handle)
    registry.register(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, describe_transactions.handle)
    registry.register(ApiKey.LIST_TRANSACTIONS, 0, 1, list_transactions.handle)
    registry.register(ApiKey.JOIN_GROUP, 0, 9, join_group.handle)
    registry.register(ApiKey.SYNC_GROUP, 0, 5, sync_group.handle)
    registry.register(ApiKey.HEARTBEAT, 0, 4, heartbeat.handle)
    registry.register(ApiKey.LEAVE_GROUP, 0, 5, leave_group.handle)
    registry.register(ApiKey.DESCRIBE_GROUPS, 0, 6, describe_groups.handle)
    registry.register(ApiKey.LIST_GROUPS, 0, 5, list_groups.handle)
    registry.register(ApiKey.DELETE_GROUPS, 0, 2, delete_groups.handle)
    registry.register(ApiKey.OFFSET_DELETE, 0, 0, offset_delete.handle)
    registry.register(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, consumer_group_heartbeat.handle)
    registry.register(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, consumer_group_describe.handle)
    registry.register(ApiKey.SHARE_GROUP_HEARTBEAT, 0, 1, share_group_heartbeat.handle)
    registry.register(ApiKey.SHARE_GROUP_DESCRIBE, 0, 1, share_group_describe.handle)
    registry.register(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 0, streams_group_heartbeat.handle)
    registry.register(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 0, streams_group_describe.handle)
    registry.register(ApiKey.SHARE_FETCH, 0, 1, share_fetch.handle_fetch)
    registry.register(ApiKey.SHARE_ACKNOWLEDGE, 0, 1, share_fetch.handle_acknowledge)
    registry.register(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1,
                      describe_share_group_offsets.handle)
    registry.register(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, alter_share_group_offsets.handle)
    registry.register(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, delete_share_group_offsets.handle)
    registry.register(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0,
                      get_telemetry_subscriptions.handle)
    registry.register(ApiKey.PUSH_TELEMETRY, 0, 0, push_telemetry.handle)
    registry.register(ApiKey.LIST_CONFIG_RESOURCES, 0, 1, list_config_resources.handle)
    registry.register(ApiKey.SASL_HANDSHAKE, 0, 1, sasl_handshake.handle)
    registry.register(ApiKey.SASL_AUTHENTICATE, 0, 2, sasl_authenticate.handle)
    registry.register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0,
                      describe_user_scram_credentials.handle)
    registry.register(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0,
                      alter_user_scram_credentials.handle)
    if client_assignors:  # seed 003's draft APIs, under keys Kafka does not use
        registry.register(ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, 0, 0,
                          consumer_group_prepare_assignment.handle)
        registry.register(ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT, 0, 0,
                          consumer_group_install_assignment.handle)
    return registry
