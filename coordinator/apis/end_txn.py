"""EndTxn: commit or abort. The transaction is written PrepareCommit/PrepareAbort, then its
markers go to every partition in it and it is written CompleteCommit/CompleteAbort; the answer
waits for all of that, so a read_committed consumer sees a committed transaction as soon as
its producer's ``commit_transaction()`` returns. (Kafka answers once the Prepare record is
written; a client cannot tell the difference except by its latency.)"""

from __future__ import annotations

from typing import Any

from coordinator import transaction
from protocol import ErrorCode

from . import txn_common, write_txn_markers
from .context import RequestContext


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not txn_common.may_write(ctx, request.transactional_id):
        return ctx.respond(error_code=ErrorCode.transactional_id_authorization_failed)
    outcome = await txn_common.run_on_transaction(
        ctx, request.transactional_id,
        transaction.end_txn(request.transactional_id, request.producer_id,
                            request.producer_epoch, request.committed), "EndTxn")
    if isinstance(outcome, ErrorCode):
        return ctx.respond(error_code=outcome)
    error = outcome.error
    if outcome.to_complete is not None:
        done = await write_txn_markers.of(ctx.broker).complete(outcome.to_complete)
        if error is ErrorCode.concurrent_transactions and done:
            error = ErrorCode.none  # a retry of an EndTxn whose markers were still going out
    return ctx.respond(error_code=txn_common.fenced_for(ctx.version, 2, error))
