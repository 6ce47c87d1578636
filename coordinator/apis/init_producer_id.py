"""InitProducerId for idempotent producers: a new producer id at epoch 0 each time, as Kafka
does without a transactional id. Transactions are not supported: a transactional id is refused
with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients treat as fatal rather than retrying.
With an authorizer, an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on
some topic (CLUSTER_AUTHORIZATION_FAILED otherwise), as Kafka."""

from __future__ import annotations

from typing import Any

from coordinator import topiclog
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext


def handle(ctx: RequestContext, request: Any) -> Any:
    if request.transactional_id is not None:
        return ctx.respond(error_code=ErrorCode.transactional_id_authorization_failed,
                           producer_id=-1, producer_epoch=-1)
    if not (ctx.authorize(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, log_denied=False)
            or ctx.authorize_any(AclOperation.WRITE, ResourceType.TOPIC)):
        return ctx.respond(error_code=ErrorCode.cluster_authorization_failed,
                           producer_id=-1, producer_epoch=-1)
    producer_id = topiclog.of(ctx.broker).producer_ids.next_id()
    return ctx.respond(error_code=ErrorCode.none, producer_id=producer_id, producer_epoch=0)
