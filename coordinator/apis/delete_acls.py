"""DeleteAcls v1-v3: the ACLs each filter matches, removed with RemoveAccessControlEntry
records in the metadata log.

Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED on every filter); SECURITY_DISABLED
with no authorizer; a filter with an UNKNOWN element gets INVALID_REQUEST on its own. An ACL
several filters match is removed once and listed under each of them."""

from __future__ import annotations

from typing import Any

from coordinator.security.acl import AclBinding, AclOperation
from coordinator.security.acl_admin import plan_delete
from protocol import ErrorCode

from .acl_common import NO_AUTHORIZER, binding_filter, cluster_denied, persist
from .context import RequestContext


def _matching(ctx: RequestContext, binding: AclBinding) -> Any:
    pattern, entry = binding.pattern, binding.entry
    return ctx.nested(
        "DeleteAclsMatchingAcl", error_code=ErrorCode.none, error_message=None,
        resource_type=int(pattern.resource_type), resource_name=pattern.name,
        pattern_type=int(pattern.pattern_type), principal=entry.principal, host=entry.host,
        operation=int(entry.operation), permission_type=int(entry.permission_type))


def _failed(ctx: RequestContext, count: int, error: ErrorCode, message: str) -> Any:
    return ctx.respond(filter_results=tuple(
        ctx.nested("DeleteAclsFilterResult", error_code=error, error_message=message,
                   matching_acls=())
        for _ in range(count)))


async def handle(ctx: RequestContext, request: Any) -> Any:
    count = len(request.filters)
    denied = cluster_denied(ctx, AclOperation.ALTER)
    if denied is not None:
        return _failed(ctx, count, *denied)
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _failed(ctx, count, ErrorCode.security_disabled, NO_AUTHORIZER)
    filters = [binding_filter(f) for f in request.filters]
    async with ctx.broker.metadata_log.lock:
        plan = plan_delete(authorizer, filters)
        try:
            await persist(ctx, authorizer, plan.records)
        except OSError as exc:
            return _failed(ctx, count, ErrorCode.kafka_storage_error,
                           f"The ACLs could not be removed: {exc}")
    return ctx.respond(filter_results=tuple(
        ctx.nested("DeleteAclsFilterResult", error_code=outcome.error,
                   error_message=outcome.message,
                   matching_acls=tuple(_matching(ctx, b) for b in matched))
        for outcome, matched in plan.outcomes))
