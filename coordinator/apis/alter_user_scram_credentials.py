"""AlterUserScramCredentials v0: add, replace or delete users' SCRAM credentials, as
``UserScramCredential`` records (a deletion is a tombstone) in ``__cluster_metadata-0``, written
and fsynced before the answer. The client sends the salted password; the server keeps only the
stored and server keys. Kafka's checks and messages (``coordinator/security/scram_admin.py``);
needs ALTER on the cluster (each user gets CLUSTER_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator.observability.logs import get_logger
from coordinator.security.acl import AclOperation, ResourceType
from coordinator.security.scram_admin import Deletion, Upsertion, UserResult, alter
from protocol import ErrorCode, api_name

from .context import RequestContext

log = get_logger("coordinator.apis.scram")


def _respond(ctx: RequestContext, results: list[UserResult]) -> Any:
    return ctx.respond(throttle_time=datetime.timedelta(0), results=tuple(
        ctx.nested("AlterUserScramCredentialsResult", user=result.user,
                   error_code=result.error, error_message=result.message)
        for result in results))


def _everyone(request: Any, error: ErrorCode, message: str) -> list[UserResult]:
    users = {item.name for item in (*request.deletions, *request.upsertions)}
    return [UserResult(user, error, message) for user in sorted(users)]


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER):
        return _respond(ctx, _everyone(request, ErrorCode.cluster_authorization_failed,
                                       f"Request {api_name(ctx.header.api_key)} is not "
                                       "authorized."))
    store = ctx.broker.scram_credentials
    deletions = [Deletion(item.name, item.mechanism) for item in request.deletions]
    upsertions = [Upsertion(item.name, item.mechanism, item.iterations, bytes(item.salt),
                            bytes(item.salted_password)) for item in request.upsertions]
    async with ctx.broker.metadata_log.lock:
        records, results = alter(store, deletions, upsertions)
        if records:
            try:
                await ctx.broker.metadata_log.write(list(records))
            except OSError as exc:
                log.error("scram credential change not persisted", error=str(exc))
                return _respond(ctx, _everyone(request, ErrorCode.kafka_storage_error,
                                               f"The credentials could not be written: {exc}"))
            for key, value in records:
                store.replay(key, value)
    for key, value in records:
        log.info("scram credential " + ("deleted" if value is None else "altered"),
                 user=key.name, mechanism=key.mechanism, principal=ctx.principal)
    return _respond(ctx, results)
