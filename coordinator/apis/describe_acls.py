"""DescribeAcls v1-v3: the ACLs a filter matches, grouped by resource pattern.

Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); SECURITY_DISABLED with no
authorizer; INVALID_REQUEST for a filter with an UNKNOWN element."""

from __future__ import annotations

from typing import Any

from coordinator.security.acl import AccessControlEntry, AclOperation, ResourcePattern
from protocol import ErrorCode

from .acl_common import binding_filter, cluster_denied
from .context import RequestContext

NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _error(ctx: RequestContext, error: ErrorCode, message: str) -> Any:
    return ctx.respond(error_code=error, error_message=message, resources=())


def _entry_key(entry: AccessControlEntry) -> tuple[str, str, int, int]:
    return entry.principal, entry.host, entry.operation, entry.permission_type


def handle(ctx: RequestContext, request: Any) -> Any:
    denied = cluster_denied(ctx, AclOperation.DESCRIBE)
    if denied is not None:
        return _error(ctx, *denied)
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _error(ctx, ErrorCode.security_disabled, NO_AUTHORIZER)
    wanted = binding_filter(request)
    problem = wanted.unknown_part()
    if problem is not None:
        return _error(ctx, ErrorCode.invalid_request, problem)
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for _, binding in authorizer.acls(wanted):
        by_pattern.setdefault(binding.pattern, []).append(binding.entry)
    resources = []
    for pattern in sorted(by_pattern, key=lambda p: (p.resource_type, p.name, p.pattern_type)):
        resources.append(ctx.nested(
            "DescribeAclsResource", resource_type=int(pattern.resource_type),
            resource_name=pattern.name, pattern_type=int(pattern.pattern_type),
            acls=tuple(ctx.nested("AclDescription", principal=e.principal, host=e.host,
                                  operation=int(e.operation),
                                  permission_type=int(e.permission_type))
                       for e in sorted(by_pattern[pattern], key=_entry_key))))
    return ctx.respond(error_code=ErrorCode.none, error_message=None, resources=tuple(resources))
