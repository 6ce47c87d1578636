"""What CreateAcls, DescribeAcls and DeleteAcls share: the cluster check, a filter from the
wire, and writing ACL records then applying them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coordinator.observability.logs import get_logger
from coordinator.security import acl_records
from coordinator.security.acl import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    from_code,
)
from coordinator.security.acl_records import Record
from coordinator.security.authorizer import StandardAuthorizer
from protocol import ErrorCode, api_name

from .context import RequestContext

log = get_logger("coordinator.apis.acls")

NO_AUTHORIZER = "No Authorizer is configured."


def cluster_denied(ctx: RequestContext, operation: AclOperation) -> tuple[ErrorCode, str] | None:
    """CLUSTER_AUTHORIZATION_FAILED unless the principal may ``operation`` on the cluster
    (Kafka's ``authorizeClusterOperation``, checked before anything else)."""
    if ctx.authorize(operation, ResourceType.CLUSTER):
        return None
    return (ErrorCode.cluster_authorization_failed,
            f"Request {api_name(ctx.header.api_key)} is not authorized.")


def binding_filter(wire: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter as Kafka's ``AclBindingFilter``."""
    return AclBindingFilter(
        from_code(ResourceType, wire.resource_type_filter), wire.resource_name_filter,
        from_code(PatternType, wire.pattern_type_filter), wire.principal_filter,
        wire.host_filter, from_code(AclOperation, wire.operation),
        from_code(AclPermissionType, wire.permission_type))


async def persist(ctx: RequestContext, authorizer: StandardAuthorizer,
                  records: list[Record]) -> None:
    """Write the records to the metadata log (fsynced), then apply them; raises ``OSError``
    with nothing applied if they could not be written. The caller holds the log's lock."""
    if not records:
        return
    try:
        await ctx.broker.metadata_log.write(records)
    except OSError as exc:
        log.error("acl change not persisted", error=str(exc))
        raise
    for key, value in records:
        acl_records.replay(authorizer, key, value)
    log.info("acls changed", api=api_name(ctx.header.api_key), records=len(records),
             acls=len(authorizer), principal=ctx.principal)


OPERATIONS_OMITTED = -(2**31)
"""An ``AuthorizedOperations`` field that was not asked for."""
TOPICS_HIDDEN = "The group has described topic(s) that the client is not authorized to describe."
"""Kafka's message when a described group uses topics the client may not DESCRIBE."""


def group_operations(ctx: RequestContext, group_id: str, include: bool,
                     error: ErrorCode) -> int:
    """A described group's ``AuthorizedOperations``: asked for and found, else omitted."""
    if include and error is ErrorCode.none:
        return ctx.authorized_operations(ResourceType.GROUP, group_id)
    return OPERATIONS_OMITTED


def hides_topics(ctx: RequestContext, names: Iterable[str]) -> bool:
    """Does a description name topics the principal may not DESCRIBE? (Kafka then answers
    TOPIC_AUTHORIZATION_FAILED for the whole group.)"""
    if ctx.broker.authorizer is None:
        return False
    wanted = set(names)
    return len(ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, wanted,
                              log_denied=False)) < len(wanted)
