"""One partition's transactions: where each producer's open transaction starts, the aborted
transactions (Kafka's transaction index), and the last stable offset they imply.

The first offset below which no transaction is open is the LSO: a read_committed Fetch returns
nothing at or past it. An aborted transaction is kept as (producer id, first offset, marker
offset) for the aborted-transactions list of a read_committed Fetch.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the abort marker's offset


class TransactionIndex:
    def __init__(self) -> None:
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[AbortedTxn] = []  # by marker offset
        self._aborted_ends: list[int] = []

    def on_transactional_batch(self, producer_id: int, base_offset: int) -> None:
        self.ongoing.setdefault(producer_id, base_offset)

    def on_marker(self, producer_id: int, commit: bool, marker_offset: int) -> None:
        first = self.ongoing.pop(producer_id, None)
        if first is not None and not commit:
            self._aborted.append(AbortedTxn(producer_id, first, marker_offset))
            self._aborted_ends.append(marker_offset)

    def last_stable_offset(self, high_watermark: int) -> int:
        return min(self.ongoing.values(), default=high_watermark)

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions that overlap offsets [start, end): what a read_committed
        consumer reading that range must skip (Kafka's ``collectAbortedTxns``)."""
        first = bisect.bisect_left(self._aborted_ends, start)
        return [txn for txn in self._aborted[first:] if txn.first_offset < end]

    def truncate_before(self, log_start_offset: int) -> None:
        """Forget aborted transactions wholly below the log start (retention deleted them)."""
        first = bisect.bisect_left(self._aborted_ends, log_start_offset)
        if first:
            del self._aborted[:first]
            del self._aborted_ends[:first]

    @property
    def open_transactions(self) -> int:
        return len(self.ongoing)
