"""DescribeConfigs v1-v4 for the BROKER, TOPIC, GROUP and CLIENT_METRICS resource types."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from coordinator import telemetry
from coordinator.config import ConfigDef
from coordinator.config.definitions import TOPIC_CONFIGS
from coordinator.config.model import ConfigType
from coordinator.groups.common import group_configs
from coordinator.metadata import topic_configs
from coordinator.metadata.config_resources import GROUP
from coordinator.metadata.topic_names import InvalidTopicName, validate_topic_name
from coordinator.security.acl import AclOperation, ResourceType
from coordinator.telemetry import subscriptions
from protocol import ErrorCode

from .context import RequestContext

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_GROUP_CONFIG = 1, 4, 5, 8


class ResourceError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _entry(ctx: RequestContext, request: Any, definition: ConfigDef, value: str | None,
           source: int, read_only: bool,
           chain: tuple[topic_configs.Synonym, ...] | None = None) -> Any:
    synonyms: tuple[Any, ...] = ()
    if request.include_synonyms:
        chain = chain or (topic_configs.Synonym(definition.name, value,
                                                topic_configs.ConfigSource(source)),)
        synonyms = tuple(ctx.nested("DescribeConfigsSynonym", name=s.name, value=s.value,
                                    source=int(s.source)) for s in chain)
    return ctx.nested(
        "DescribeConfigsResourceResult", name=definition.name, value=value, read_only=read_only,
        config_source=source, is_sensitive=definition.type is ConfigType.PASSWORD,
        synonyms=synonyms, config_type=int(definition.type),
        documentation=definition.doc if getattr(request, "include_documentation", False)
        else None,
    )


def _wanted(definitions: Iterable[ConfigDef], keys: tuple[str, ...] | None) -> list[ConfigDef]:
    if keys is None:
        return list(definitions)
    wanted = set(keys)
    return [d for d in definitions if d.name in wanted]


def _broker_configs(ctx: RequestContext, request: Any, resource: Any) -> list[Any]:
    broker = ctx.broker
    if resource.resource_name == "":
        return []  # no dynamic cluster-wide defaults are set on this node
    if resource.resource_name != str(ctx.node):
        raise ResourceError(ErrorCode.invalid_request,
                            f"Unexpected broker id, expected {ctx.node} or empty string, "
                            f"but received {resource.resource_name}")
    config = broker.config
    entries = []
    for definition in _wanted((config.definition(n) for n, _ in config.items()),
                              resource.configuration_keys):
        source = STATIC_BROKER_CONFIG if definition.name in config.explicit else DEFAULT_CONFIG
        entries.append(_entry(ctx, request, definition, definition.render(config[definition.name]),
                              source, read_only=True))
    return entries


def _topic_configs(ctx: RequestContext, request: Any, resource: Any) -> list[Any]:
    try:
        validate_topic_name(resource.resource_name)
    except InvalidTopicName as exc:
        raise ResourceError(ErrorCode.invalid_topic_exception, str(exc)) from None
    topic = ctx.broker.image.topic(resource.resource_name)
    if topic is None:
        raise ResourceError(ErrorCode.unknown_topic_or_partition,
                            f"The topic '{resource.resource_name}' does not exist.")
    entries = []
    for definition in _wanted(TOPIC_CONFIGS, resource.configuration_keys):
        chain = tuple(topic_configs.synonyms(definition, topic.configs, ctx.broker.config))
        entries.append(_entry(ctx, request, definition, chain[0].value, chain[0].source,
                              read_only=False, chain=chain))
    return entries


def _group_configs(ctx: RequestContext, request: Any, resource: Any) -> list[Any]:
    """Every group config (kafka-python's admin client checks keys against this list), from
    the metadata, whether the group exists or not: the group's overrides
    (DYNAMIC_GROUP_CONFIG), else the default from the broker's config (DEFAULT_CONFIG)."""
    group_id = resource.resource_name
    if not group_id:
        raise ResourceError(ErrorCode.invalid_request, "Group id must not be empty.")
    stored = ctx.broker.image.configs.configs(GROUP, group_id)
    config = ctx.broker.config
    entries = []
    names = group_configs.GROUP_CONFIG_NAMES
    for definition in _wanted((group_configs.definition(n) for n in names),
                              resource.configuration_keys):
        value: str | None
        if definition.name in stored:
            value, source = stored[definition.name], DYNAMIC_GROUP_CONFIG
        else:
            value = definition.render(group_configs.default_value(definition.name, config))
            source = DEFAULT_CONFIG
        entries.append(_entry(ctx, request, definition, value, source, read_only=False))
    return entries


def _client_metrics_configs(ctx: RequestContext, request: Any, resource: Any) -> list[Any]:
    """The configs set on a client-metrics subscription, as Kafka's ConfigHelper gives them:
    only those set (CLIENT_METRICS_CONFIG), none for a name that has none."""
    if not resource.resource_name:
        raise ResourceError(ErrorCode.invalid_request,
                            "Client metrics subscription name must not be empty")
    stored = telemetry.of(ctx.broker).subscriptions.stored(resource.resource_name)
    return [_entry(ctx, request, definition, stored[definition.name], CLIENT_METRICS_CONFIG,
                   read_only=False)
            for definition in subscriptions.DEFINITIONS if definition.name in stored]


BROKER_LOGGER, CLIENT_METRICS = 8, 16
CLIENT_METRICS_CONFIG = 7
_AUTHORIZED_ON: dict[int, tuple[ResourceType, ErrorCode]] = {
    # Kafka's ConfigHelper: what each config resource is authorized against
    BROKER: (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed),
    BROKER_LOGGER: (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed),
    CLIENT_METRICS: (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed),
    TOPIC: (ResourceType.TOPIC, ErrorCode.topic_authorization_failed),
    GROUP: (ResourceType.GROUP, ErrorCode.group_authorization_failed),
}


def config_access_denied(ctx: RequestContext, operation: AclOperation, resource_type: int,
                         resource_name: str) -> ErrorCode | None:
    """The authorization error for ``operation`` (DESCRIBE_CONFIGS, ALTER_CONFIGS) on a
    config resource, or None."""
    on = _AUTHORIZED_ON.get(resource_type)
    if on is None:
        return None
    acl_type, error = on
    name = "kafka-cluster" if acl_type is ResourceType.CLUSTER else resource_name
    return None if ctx.authorize(operation, acl_type, name) else error


_Describe = Callable[[RequestContext, Any, Any], list[Any]]
_BY_TYPE: dict[int, _Describe] = {
    BROKER: _broker_configs, TOPIC: _topic_configs, GROUP: _group_configs,
    CLIENT_METRICS: _client_metrics_configs}


async def handle(ctx: RequestContext, request: Any) -> Any:
    results = []
    for resource in request.resources:
        describe = _BY_TYPE.get(resource.resource_type)
        try:
            denied = config_access_denied(ctx, AclOperation.DESCRIBE_CONFIGS,
                                          resource.resource_type, resource.resource_name)
            if denied is not None:
                raise ResourceError(denied, denied.name)
            if describe is None:
                raise ResourceError(ErrorCode.invalid_request,
                                    f"Unsupported resource type: {resource.resource_type}")
            configs = describe(ctx, request, resource)
        except ResourceError as exc:
            results.append(ctx.nested("DescribeConfigsResult", error_code=exc.code,
                                      error_message=exc.message,
                                      resource_type=resource.resource_type,
                                      resource_name=resource.resource_name, configs=()))
            continue
        results.append(ctx.nested("DescribeConfigsResult", error_code=ErrorCode.none,
                                  error_message=None, resource_type=resource.resource_type,
                                  resource_name=resource.resource_name, configs=tuple(configs)))
    return ctx.respond(results=tuple(results))
