"""WriteTxnMarkers, in process: what the transaction coordinator sends, once a transaction is
prepared, to every partition in it, and the completion that follows.

A data partition gets its commit or abort marker (a control batch, which moves its last stable
offset); a ``__consumer_offsets`` partition added by AddOffsetsToTxn gets the group
coordinator's marker handler (pending transactional offsets committed or dropped). Once every
marker is durable the transaction is written CompleteCommit/CompleteAbort. A transaction whose
completion fails (a partition loading, a write error) stays prepared and is completed by the
next pass of ``run``: every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` it
aborts timed-out transactions, expires idle transactional ids, and completes whatever is
prepared, which after a restart includes every transaction left in doubt (from its first pass,
as soon as the partitions are loaded).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from coordinator import topiclog, transaction
from coordinator.groups.txn_offsets import end_transaction_marker
from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError, PartitionState
from coordinator.topiclog import BatchError
from coordinator.transaction import TransactionMetadata, TransactionState
from coordinator.transaction.coordinator import OFFSETS_TOPIC

log = get_logger("coordinator.transaction")

COORDINATOR_EPOCH = 0  # one node, never re-elected


class TransactionMarkers:
    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self._in_flight: dict[str, asyncio.Task[bool]] = {}

    def config(self) -> transaction.TransactionConfig:
        config = self.broker.config
        return transaction.TransactionConfig(
            max_timeout_ms=config["transaction.max.timeout.ms"],
            id_expiration_ms=config["transactional.id.expiration.ms"])

    async def complete(self, meta: TransactionMetadata) -> bool:
        """Write the markers of a prepared transaction, then its completion; True once it is
        complete. Concurrent calls for one transactional id share the work."""
        task = self._in_flight.get(meta.transactional_id)
        if task is None:
            task = asyncio.create_task(self._complete(meta))
            self._in_flight[meta.transactional_id] = task
            task.add_done_callback(lambda _: self._in_flight.pop(meta.transactional_id, None))
        return await asyncio.shield(task)

    async def _complete(self, meta: TransactionMetadata) -> bool:
        commit = meta.state is TransactionState.PREPARE_COMMIT
        runtime = self.broker.runtime
        logs = topiclog.of(self.broker)
        written: list[Any] = []
        groups = [partition for topic, partition in meta.partitions if topic == OFFSETS_TOPIC]
        try:
            for topic, partition in sorted(meta.partitions):
                if topic == OFFSETS_TOPIC:
                    continue
                plog = logs.get(topic, partition)
                if plog is None:
                    continue  # the topic was deleted: nothing to mark (as Kafka)
                try:
                    plog.append_marker(meta.producer_id, meta.producer_epoch, commit,
                                       COORDINATOR_EPOCH, logs.now_ms())
                    written.append(plog)
                except BatchError as exc:
                    log.warning("transaction marker refused", transactional_id=(
                        meta.transactional_id), topic=topic, partition=partition,
                        error=exc.code.name, reason=exc.message)
            if written:
                logs.notify_appended()
            # every partition's marker made durable at once (one fsync round each)
            await asyncio.gather(
                *(logs.make_durable(plog, plog.log_end_offset) for plog in written),
                *(runtime.write(partition, end_transaction_marker(meta.producer_id, commit),
                                name="WriteTxnMarkers") for partition in groups))
            # Submitted, the completion is applied before any later event of the partition
            # runs (the producer's next AddPartitionsToTxn sees it), so its fsync is not
            # waited for: if it is lost, the transaction is still prepared after a restart and
            # its markers (durable already) are written again.
            completion = runtime.submit(
                runtime.partition_for(meta.transactional_id), True,
                transaction.complete(meta.transactional_id, meta.producer_id,
                                     meta.producer_epoch), name="EndTxn complete")
        except (CoordinatorError, OSError) as exc:
            log.warning("transaction not completed; retried by the next pass",
                        transactional_id=meta.transactional_id, error=str(exc))
            return False
        completion.add_done_callback(lambda done: _completed(meta, commit, done))
        return True

    async def scan_once(self) -> int:
        """One pass over every loaded partition; returns how many transactions it completed."""
        runtime = self.broker.runtime
        handler = transaction.scan(self.config())
        prepared: list[TransactionMetadata] = []
        for index in range(runtime.num_partitions):
            if runtime.state(index) is not PartitionState.ACTIVE:
                continue
            try:
                prepared.extend(await runtime.write(index, handler, name="transaction scan"))
            except CoordinatorError:
                continue
        for meta in prepared:
            if meta.state is TransactionState.PREPARE_ABORT:
                log.info("aborting a transaction", transactional_id=meta.transactional_id,
                         producer_id=meta.producer_id, producer_epoch=meta.producer_epoch)
        results = await asyncio.gather(*(self.complete(meta) for meta in prepared))
        return sum(results)

    async def run(self) -> None:
        interval = self.broker.config[
            "transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000.0
        await self.broker.runtime.wait_loaded()
        while True:
            try:
                await self.scan_once()
            except Exception:  # a bug must not end the loop that completes transactions
                log.exception("transaction scan failed")
            await asyncio.sleep(interval)


def _completed(meta: TransactionMetadata, commit: bool, done: asyncio.Future[Any]) -> None:
    if done.cancelled() or done.exception() is not None:
        log.warning("transaction completion not written; retried by the next pass",
                    transactional_id=meta.transactional_id,
                    error=None if done.cancelled() else str(done.exception()))
        return
    if done.result():
        sensors.record_transaction_completed("commit" if commit else "abort")
        log.debug("transaction completed", transactional_id=meta.transactional_id,
                  producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                  result="commit" if commit else "abort", partitions=len(meta.partitions))


_BY_BROKER: weakref.WeakKeyDictionary[Any, TransactionMarkers] = weakref.WeakKeyDictionary()


def of(broker: Any) -> TransactionMarkers:
    """The broker's marker writer (made on first use)."""
    markers = _BY_BROKER.get(broker)
    if markers is None:
        markers = _BY_BROKER[broker] = TransactionMarkers(broker)
    return markers
