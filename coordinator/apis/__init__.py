"""One module per Kafka API; ``build_registry`` puts them in the table ApiVersions advertises."""

from __future__ import annotations

from protocol import ApiKey

from . import (
    api_versions,
    create_partitions,
    create_topics,
    delete_topics,
    describe_cluster,
    describe_configs,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    metadata,
    offset_commit,
    offset_fetch,
    sync_group,
)
from .context import RequestContext
from .registry import ApiRegistry, ApiSpec

__all__ = ["ApiRegistry", "ApiSpec", "RequestContext", "build_registry"]


def build_registry() -> ApiRegistry:
    registry = ApiRegistry()
    registry.register(ApiKey.API_VERSIONS, 0, 4, api_versions.make_handler(registry))
    registry.register(ApiKey.METADATA, 0, 13, metadata.handle)
    registry.register(ApiKey.FIND_COORDINATOR, 0, 6, find_coordinator.handle)
    registry.register(ApiKey.CREATE_TOPICS, 2, 7, create_topics.handle)
    registry.register(ApiKey.DELETE_TOPICS, 1, 6, delete_topics.handle)
    registry.register(ApiKey.CREATE_PARTITIONS, 0, 3, create_partitions.handle)
    registry.register(ApiKey.DESCRIBE_CLUSTER, 0, 2, describe_cluster.handle)
    registry.register(ApiKey.DESCRIBE_CONFIGS, 1, 4, describe_configs.handle)
    registry.register(ApiKey.OFFSET_COMMIT, 2, 9, offset_commit.handle)
    registry.register(ApiKey.OFFSET_FETCH, 1, 9, offset_fetch.handle)
    registry.register(ApiKey.JOIN_GROUP, 0, 9, join_group.handle)
    registry.register(ApiKey.SYNC_GROUP, 0, 5, sync_group.handle)
    registry.register(ApiKey.HEARTBEAT, 0, 4, heartbeat.handle)
    registry.register(ApiKey.LEAVE_GROUP, 0, 5, leave_group.handle)
    return registry
