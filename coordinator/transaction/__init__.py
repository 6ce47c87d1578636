"""The transaction coordinator (KIP-98), on the coordinator partition of each transactional
id: its state (``state.py``, replayed from TransactionLog records) and its pure handlers
(``coordinator.py``: InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, completion after the markers, timeouts and id expiration, and the
reads of DescribeTransactions and ListTransactions). Writing the markers to the partitions of a
transaction is the wiring's (``coordinator/apis/write_txn_markers.py``): this package imports
neither the data plane nor the groups."""

from .coordinator import (
    COMPLETED,
    AddOutcome,
    EndOutcome,
    InitOutcome,
    TransactionConfig,
    add_offsets,
    add_partitions,
    complete,
    describe,
    end_txn,
    init_producer_id,
    list_transactions,
    offsets_partition,
    scan,
)
from .state import TransactionMetadata, TransactionsState, TransactionState, replay

__all__ = [
    "COMPLETED",
    "AddOutcome",
    "EndOutcome",
    "InitOutcome",
    "TransactionConfig",
    "TransactionMetadata",
    "TransactionState",
    "TransactionsState",
    "add_offsets",
    "add_partitions",
    "complete",
    "describe",
    "end_txn",
    "init_producer_id",
    "list_transactions",
    "offsets_partition",
    "replay",
    "scan",
]
