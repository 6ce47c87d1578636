"""What one ShareFetch may acquire, in virtual time: MaxBytes (0 gets nothing; split evenly over
the session's partitions; the first batch whatever its size), v0's PartitionMaxBytes,
``group.share.partition.max.record.locks``, and the bound while other members of the group
wait for their assignment (``groups.share.waiting``)."""

from __future__ import annotations

from coordinator.groups.share.env import ShareGroupSettings
from coordinator.groups.share.fetch import FetchResult, PartitionRequest
from coordinator.testing.share_group_context import RECORD_BYTES, ShareGroupContext

G, T = "workers", "jobs"
ACCEPT = 1


def context(partitions: int = 1, **settings: int | bool) -> ShareGroupContext:
    values: dict[str, int | bool] = {"assignment_interval_ms": 0, "assignor_offload": False}
    values.update(settings)
    ctx = ShareGroupContext(ShareGroupSettings(**values))  # type: ignore[arg-type]
    ctx.create_topic(T, partitions)
    return ctx


def parts(ctx: ShareGroupContext, count: int = 1, max_bytes: int | None = None,
          acks: tuple[tuple[int, int, tuple[int, ...]], ...] = ()) -> list[PartitionRequest]:
    return [PartitionRequest(ctx.topic_id(T), p, acks, None, max_bytes) for p in range(count)]


def taken(result: FetchResult) -> dict[int, list[tuple[int, int]]]:
    return {p.partition: [(r.first_offset, r.last_offset) for r in p.acquired]
            for p in result.partitions if p.acquired}


def test_max_bytes_zero_acquires_nothing_and_the_first_batch_comes_whatever_its_size() -> None:
    ctx = context()
    ctx.heartbeat(G, "a", 0, [T])
    ctx.fetch(G, "a", 0, parts(ctx))  # the session starts at the log end ("latest")
    ctx.logs.produce(T, 0, 5)
    assert taken(ctx.fetch(G, "a", 1, max_bytes=0)) == {}
    assert taken(ctx.fetch(G, "a", 2, max_bytes=1)) == {0: [(0, 4)]}


def test_max_bytes_is_split_evenly_over_the_sessions_partitions() -> None:
    ctx = context(partitions=2)
    ctx.heartbeat(G, "a", 0, [T])
    ctx.fetch(G, "a", 0, parts(ctx, 2))
    for p in (0, 1):
        ctx.logs.produce(T, p, 5)
        ctx.logs.produce(T, p, 5)
    # 10 records' bytes over two partitions: 5 each, one 5-record batch from each
    got = taken(ctx.fetch(G, "a", 1, max_bytes=10 * RECORD_BYTES))
    assert got == {0: [(0, 4)], 1: [(0, 4)]}


def test_v0_partition_max_bytes_zero_acknowledges_without_fetching() -> None:
    ctx = context()
    ctx.heartbeat(G, "a", 0, [T])
    ctx.fetch(G, "a", 0, parts(ctx, max_bytes=1 << 20))
    ctx.logs.produce(T, 0, 4)
    assert taken(ctx.fetch(G, "a", 1)) == {0: [(0, 3)]}
    ctx.logs.produce(T, 0, 4)
    done = ctx.fetch(G, "a", 2, parts(ctx, max_bytes=0, acks=((0, 3, (ACCEPT,)),)))
    assert taken(done) == {} and [p.ack_error for p in done.partitions] == [0]
    assert ctx.share_partition(G, T, 0).start_offset == 4
    # the limit stays with the session's partition until a request changes it
    assert taken(ctx.fetch(G, "a", 3)) == {}
    assert taken(ctx.fetch(G, "a", 4, parts(ctx, max_bytes=1 << 20))) == {0: [(4, 7)]}


def test_fetches_acquire_nothing_past_the_record_lock_limit() -> None:
    ctx = context(partition_max_record_locks=10)
    ctx.heartbeat(G, "a", 0, [T])
    ctx.fetch(G, "a", 0, parts(ctx))
    for _ in range(5):
        ctx.logs.produce(T, 0, 4)
    # the limit is reached inside the third batch: acquired to its end (Kafka's alignment)
    assert taken(ctx.fetch(G, "a", 1)) == {0: [(0, 11)]}
    assert taken(ctx.fetch(G, "a", 2)) == {}
    ctx.acknowledge(G, "a", 3, parts(ctx, acks=((0, 3, (ACCEPT,)),)))
    assert taken(ctx.fetch(G, "a", 4)) == {0: [(12, 15)]}  # 4 slots freed: one batch


def test_a_member_takes_only_its_share_while_another_waits_for_its_assignment() -> None:
    ctx = context(assignment_interval_ms=30_000)
    ctx.heartbeat(G, "a", 0, [T])  # the group's first target: computed at once
    assert ctx.group(G).members["a"].assigned_partitions
    ctx.fetch(G, "a", 0, parts(ctx))
    ctx.heartbeat(G, "b", 0, [T])  # no target for b before the interval has passed
    assert not ctx.group(G).members["b"].assigned_partitions
    ctx.logs.produce(T, 0, 100)  # one batch of 100
    # a's even share of the partition (2 members): 50, exactly (the batch is split)
    assert taken(ctx.fetch(G, "a", 1)) == {0: [(0, 49)]}
    ctx.acknowledge(G, "a", 2, parts(ctx, acks=((0, 49, (ACCEPT,)),)))
    assert taken(ctx.fetch(G, "a", 3)) == {}  # over the wait, not per fetch
    ctx.logs.produce(T, 0, 10)
    assert taken(ctx.fetch(G, "a", 4)) == {0: [(50, 54)]}  # and of what was produced since
    ctx.advance(30_000)
    ctx.heartbeat(G, "b", ctx.group(G).members["b"].member_epoch)  # b gets the partition
    assert ctx.group(G).members["b"].assigned_partitions
    # the rest, and a's 50-54 whose lock expired meanwhile (redelivered)
    assert taken(ctx.fetch(G, "b", 0, parts(ctx))) == {0: [(50, 54), (55, 109)]}


def test_a_member_behind_its_target_acquires_only_from_its_new_partitions() -> None:
    ctx = context(partitions=2, assignment_interval_ms=30_000)
    ctx.heartbeat(G, "a", 0, [T])  # a: both partitions
    ctx.fetch(G, "a", 0, parts(ctx, 2))
    ctx.heartbeat(G, "b", 0, [T])
    ctx.advance(30_000)
    ctx.heartbeat(G, "b", ctx.group(G).members["b"].member_epoch)  # the new target: one each
    b_has = ctx.group(G).members["b"].assigned_partitions[ctx.topic_id(T)]
    a_target = ctx.group(G).target["a"][ctx.topic_id(T)]
    assert len(b_has) == 1 and a_target == {0, 1} - b_has
    for p in (0, 1):
        ctx.logs.produce(T, p, 10)
    # a still has both partitions (until its next heartbeat): it acquires from its target's
    assert set(taken(ctx.fetch(G, "a", 1))) == set(a_target)
    epoch = ctx.group(G).members["a"].member_epoch
    ctx.heartbeat(G, "a", epoch)
    assert set(taken(ctx.fetch(G, "b", 0, parts(ctx, 2)))) == set(b_has)


def test_a_reopened_session_does_not_renew_the_members_share() -> None:
    ctx = context(assignment_interval_ms=30_000)
    ctx.heartbeat(G, "a", 0, [T])
    ctx.fetch(G, "a", 0, parts(ctx))
    ctx.heartbeat(G, "b", 0, [T])  # waits for its assignment
    ctx.logs.produce(T, 0, 100)
    assert taken(ctx.fetch(G, "a", 1)) == {0: [(0, 49)]}
    ctx.acknowledge(G, "a", 2, parts(ctx, acks=((0, 49, (ACCEPT,)),)))
    assert taken(ctx.fetch(G, "a", 0, parts(ctx))) == {}  # a new session, the same share
