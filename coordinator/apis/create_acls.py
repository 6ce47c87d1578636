"""CreateAcls v1-v3: new ACLs written as AccessControlEntry records to the metadata log.

Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED); SECURITY_DISABLED with no
authorizer; a binding Kafka refuses gets INVALID_REQUEST on its own; one that exists already
succeeds without a record."""

from __future__ import annotations

from typing import Any

from coordinator.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    from_code,
)
from coordinator.security.acl_admin import plan_create
from protocol import ErrorCode

from .acl_common import NO_AUTHORIZER, cluster_denied, persist
from .context import RequestContext


def _binding(creation: Any) -> AclBinding:
    return AclBinding(
        ResourcePattern(from_code(ResourceType, creation.resource_type),
                        creation.resource_name,
                        from_code(PatternType, creation.resource_pattern_type)),
        AccessControlEntry(creation.principal, creation.host,
                           from_code(AclOperation, creation.operation),
                           from_code(AclPermissionType, creation.permission_type)))


def _results(ctx: RequestContext, outcomes: list[tuple[ErrorCode, str | None]]) -> Any:
    return ctx.respond(results=tuple(
        ctx.nested("AclCreationResult", error_code=error, error_message=message)
        for error, message in outcomes))


async def handle(ctx: RequestContext, request: Any) -> Any:
    count = len(request.creations)
    denied = cluster_denied(ctx, AclOperation.ALTER)
    if denied is not None:
        return _results(ctx, [denied] * count)
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _results(ctx, [(ErrorCode.security_disabled, NO_AUTHORIZER)] * count)
    bindings = [_binding(c) for c in request.creations]
    async with ctx.broker.metadata_log.lock:
        plan = plan_create(authorizer, bindings)
        try:
            await persist(ctx, authorizer, plan.records)
        except OSError as exc:
            return _results(ctx, [(ErrorCode.kafka_storage_error,
                                   f"The ACLs could not be written: {exc}")] * count)
    return _results(ctx, [(o.error, o.message) for o in plan.outcomes])
