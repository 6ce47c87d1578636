"""The chaos soak's journal and its checks: what counts as a lost commit, a lost record, a
duplicate; percentiles of the reconvergence times."""

from __future__ import annotations

import threading
from collections import Counter

from coordinator.soak.journal import Journal, lost_commits, percentile, record_losses


def test_the_journal_keeps_the_highest_acknowledged_offset_per_partition() -> None:
    journal = Journal()
    journal.commit_acked("g", "t", 0, 5)
    journal.commit_acked("g", "t", 0, 9)
    journal.commit_acked("g", "t", 0, 7)  # an older position acknowledged late: not a step back
    journal.commit_acked("h", "t", 1, 3)
    assert journal.commits == 4
    assert journal.commits_snapshot() == {("g", "t", 0): 9, ("h", "t", 1): 3}


def test_threads_journal_without_losing_counts() -> None:
    journal = Journal()

    def work(n: int) -> None:
        for i in range(1000):
            journal.record_acked(f"{n}-{i}".encode())
            journal.commit_acked("g", "t", n, i)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert journal.records == 4000 and len(journal.acked_values) == 4000
    assert journal.commits == 4000
    assert journal.commits_snapshot() == {("g", "t", n): 999 for n in range(4)}


def test_a_commit_read_back_older_or_missing_is_lost() -> None:
    acked = {("g", "t", 0): 10, ("g", "t", 1): 20, ("g", "t", 2): 30}
    assert lost_commits(acked, {("g", "t", 0): 10, ("g", "t", 1): 25, ("g", "t", 2): 30}) == 0
    assert lost_commits(acked, {("g", "t", 0): 9, ("g", "t", 1): 20}) == 2  # older, missing


def test_records_missing_are_lost_and_extra_copies_are_duplicates() -> None:
    stored = Counter({b"a": 1, b"b": 2, b"c": 1, b"unacked": 3})
    assert record_losses([b"a", b"b", b"c"], stored) == (0, 3)
    assert record_losses([b"a", b"x", b"y"], Counter({b"a": 1})) == (2, 0)


def test_percentiles_are_nearest_rank() -> None:
    samples = [float(n) for n in range(1, 101)]
    assert percentile(samples, 0.5) == 50.0
    assert percentile(samples, 0.99) == 99.0
    assert percentile([3.0], 0.99) == 3.0
    assert percentile([], 0.5) is None
