"""The compact job sent to assignor workers: packed targets and the target cache."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from coordinator.groups.common.assignor_job import (
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
