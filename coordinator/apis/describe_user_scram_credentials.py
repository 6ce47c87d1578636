"""DescribeUserScramCredentials v0: each user's SCRAM mechanisms and iteration counts (never
salts or keys). Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator.security.acl import AclOperation, ResourceType
from coordinator.security.scram_admin import describe
from protocol import ErrorCode

from .context import RequestContext


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER):
        return ctx.respond(throttle_time=datetime.timedelta(0),
                           error_code=ErrorCode.cluster_authorization_failed,
                           error_message="Cluster authorization failed.", results=())
    names = None if request.users is None else [user.name for user in request.users]
    results = describe(ctx.broker.scram_credentials, names)
    return ctx.respond(
        throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, error_message=None,
        results=tuple(ctx.nested(
            "DescribeUserScramCredentialsResult", user=result.user, error_code=result.error,
            error_message=result.message,
            credential_infos=tuple(ctx.nested("CredentialInfo", mechanism=int(mechanism),
                                              iterations=iterations)
                                   for mechanism, iterations in result.credentials))
            for result in results))
