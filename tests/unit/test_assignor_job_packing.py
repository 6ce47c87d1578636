"""The compact job sent to assignor workers: packed targets and the target cache."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from coordinator.groups.common.assignor_job import (
    PreparedJob,
    TargetIndexCache,
    build_job,
    pack_target,
    unpack_target,
)

targets = st.dictionaries(st.integers(0, 5000), st.frozensets(st.integers(0, 100_000),
                                                               min_size=1, max_size=50),
                          max_size=40)


@given(targets)
def test_a_packed_target_unpacks_to_itself(target: dict[int, frozenset[int]]) -> None:
    assert unpack_target(pack_target(target.items())) == target


@dataclass(frozen=True)
class _Member:
    member_id: str
    subscribed_topic_names: tuple[str, ...]
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class _Topic:
    topic_id: uuid.UUID
    partitions: int


def test_the_cache_reuses_packed_targets_that_are_the_same_object() -> None:
    metadata = {"a": _Topic(uuid.uuid4(), 4), "b": _Topic(uuid.uuid4(), 2)}
    members = {"m1": _Member("m1", ("a", "b")), "m2": _Member("m2", ("a",))}
    t1 = {metadata["a"].topic_id: frozenset({0, 1}), metadata["b"].topic_id: frozenset({1})}
    t2 = {metadata["a"].topic_id: frozenset({2, 3})}
    cache = TargetIndexCache()
    first = build_job("g", 3, "uniform", members, {"m1": t1, "m2": t2}, metadata, cache=cache)
    assert [unpack_target(t) for t in first.job.targets if t] == [{0: {0, 1}, 1: {1}},
                                                                  {0: {2, 3}}]
    t2_new = {metadata["a"].topic_id: frozenset({2})}
    second = build_job("g", 4, "uniform", members, {"m1": t1, "m2": t2_new}, metadata,
                       cache=cache)
    assert second.job.targets[0] is first.job.targets[0]  # unchanged target: not packed again
    assert second.job.targets[1] is not None
    assert unpack_target(second.job.targets[1]) == {0: {2}}
    # a topic set change (new index table) drops the cache
    metadata["c"] = _Topic(uuid.uuid4(), 1)
    third = build_job("g", 5, "uniform", members, {"m1": t1, "m2": t2_new}, metadata,
                      cache=cache)
    assert third.job.targets[0] is not None
    assert unpack_target(third.job.targets[0]) == {0: {0, 1}, 1: {1}}
    assert third.job.targets[0] is not first.job.targets[0]


def _fresh_and_cached(cache: TargetIndexCache, members: dict[str, _Member],
                      targets: dict[str, dict[uuid.UUID, frozenset[int]]],
                      metadata: dict[str, _Topic]) -> PreparedJob:
    cached = build_job("g", 7, "uniform", members, targets, metadata, cache=cache)
    fresh = build_job("g", 7, "uniform", members, targets, metadata)
    assert cached.job == fresh.job
    assert cached.topic_ids == fresh.topic_ids
    return cached


def test_a_job_from_the_cache_is_the_job_built_afresh_whatever_changed() -> None:
    """The cache keeps rows, subscriptions and the topic table between runs: after each kind
    of change between two runs, the job is the one built without it."""
    metadata = {n: _Topic(uuid.uuid4(), 3) for n in ("a", "b", "c")}
    ab, bc = ("a", "b"), ("b", "c")
    members = {f"m{i}": _Member(f"m{i}", ab if i % 2 else bc) for i in range(6)}

    def tid(name: str) -> uuid.UUID:
        return metadata[name].topic_id

    targets = {"m0": {tid("b"): frozenset({0}), tid("c"): frozenset({1})},
               "m1": {tid("a"): frozenset({0, 2})}}
    cache = TargetIndexCache()
    _fresh_and_cached(cache, members, targets, metadata)
    members["m2"] = _Member("m2", bc, rack_id="r1")  # a member's fields changed
    _fresh_and_cached(cache, members, targets, metadata)
    targets = {**targets, "m1": {tid("a"): frozenset({1})}}  # a target replaced
    _fresh_and_cached(cache, members, targets, metadata)
    del members["m3"]  # a member left; one joins with a subscription of its own
    members["m9"] = _Member("m9", ("c",), instance_id="i9")
    _fresh_and_cached(cache, members, targets, metadata)
    metadata = {**metadata, "b": _Topic(tid("b"), 5)}  # partitions added
    _fresh_and_cached(cache, members, targets, metadata)
    metadata = {**metadata, "a": _Topic(uuid.uuid4(), 3)}  # "a" deleted and created again
    cached = _fresh_and_cached(cache, members, targets, metadata)
    # m1's target names the old "a": not packed against the new one's index
    assert cached.job.targets[cached.job.member_ids.index("m1")] == b""
    metadata.pop("c")  # a topic gone (changed in place: compared, not trusted by identity)
    _fresh_and_cached(cache, members, targets, metadata)


def test_members_that_did_not_change_reuse_their_rows_and_subscriptions() -> None:
    metadata = {n: _Topic(uuid.uuid4(), 4) for n in ("a", "b")}
    members = {"m1": _Member("m1", ("a", "b")), "m2": _Member("m2", ("a",))}
    targets = {"m1": {metadata["a"].topic_id: frozenset({0, 1})},
               "m2": {metadata["a"].topic_id: frozenset({2, 3})}}
    cache = TargetIndexCache()
    first = build_job("g", 3, "uniform", members, targets, metadata, cache=cache).job
    members = {**members, "m2": _Member("m2", ("a",), rack_id="r")}
    second = build_job("g", 4, "uniform", members, targets, dict(metadata), cache=cache).job
    assert second.targets[0] is first.targets[0]
    assert second.targets[1] is first.targets[1]  # the member changed, its target did not
    assert second.racks == (None, "r")
    assert second.subscriptions[0] is first.subscriptions[0]
    assert second.partition_counts is first.partition_counts  # an equal metadata mapping
