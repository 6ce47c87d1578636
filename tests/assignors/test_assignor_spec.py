"""The spec builder, the registry, pickling and the benchmark entry points."""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import subprocess
import sys
import uuid

import pytest

from assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNORS,
    AssignmentSpec,
    AssignmentSpecError,
    GroupAssignment,
    LagAssignor,
    MemberSpec,
    RangeAssignor,
    TopicMetadata,
    UniformAssignor,
    UnknownAssignorError,
    bench,
    get_assignor,
)

from .assignor_checks import topic_id

T0, T1 = topic_id(0), topic_id(1)


def test_registry() -> None:
    assert set(ASSIGNORS) == {"uniform", "range", "lag"}
    assert DEFAULT_ASSIGNORS == ("uniform", "range")
    assert isinstance(get_assignor("uniform"), UniformAssignor)
    assert isinstance(get_assignor("range"), RangeAssignor)
    lag = get_assignor("lag", stickiness_tolerance=0.5)
    assert isinstance(lag, LagAssignor)
    assert lag.stickiness_tolerance == 0.5
    with pytest.raises(UnknownAssignorError):
        get_assignor("roundrobin")
    for name, cls in ASSIGNORS.items():
        assert cls.name == name
        assert isinstance(pickle.loads(pickle.dumps(get_assignor(name))), cls)


def test_builder_drops_what_cannot_be_valid() -> None:
    ghost = uuid.uuid4()
    topics = [TopicMetadata(T1, "b", 2), TopicMetadata(T0, "a", 3)]
    members = [
        MemberSpec("m2", {T0, ghost}, assignment={T0: [2, 1, 9], ghost: [0]}),
        MemberSpec("m1", {T0, T1}, assignment={T0: [1], T1: [0, 1]}),
    ]
    spec = AssignmentSpec.build(members, topics)
    spec.validate()
    assert spec.member_ids == ("m1", "m2")
    assert spec.topic_names == ("a", "b")
    assert spec.subscriptions[spec.member_subscriptions[1]] == (0,)
    # m1 comes first and keeps a:1; m2 keeps a:2; a:9 and the unknown topic are dropped
    assert spec.current_topics == ((0, 1), (0,))
    assert spec.current_partitions == (((1,), (0, 1)), ((2,),))


def test_builder_rejects_duplicates() -> None:
    with pytest.raises(AssignmentSpecError):
        AssignmentSpec.build([MemberSpec("m", {T0}), MemberSpec("m", {T0})], [])
    with pytest.raises(AssignmentSpecError):
        AssignmentSpec.build([], [TopicMetadata(T0, "a", 1), TopicMetadata(T0, "b", 1)])


def test_validate_catches_double_ownership() -> None:
    spec = AssignmentSpec(
        member_ids=("a", "b"), instance_ids=(None, None), member_racks=(-1, -1),
        member_subscriptions=(0, 0), subscriptions=((0,),),
        current_topics=((0,), (0,)), current_partitions=(((0,),), ((0,),)),
        topic_ids=(T0,), topic_names=("t",), partition_counts=(1,),
    )
    with pytest.raises(AssignmentSpecError):
        spec.validate()


def test_builder_shared_keeps_every_holder() -> None:
    """A share group's target may give a partition to several members (``shared=True``)."""
    topics = [TopicMetadata(T0, "a", 2)]
    members = [
        MemberSpec("m2", {T0}, assignment={T0: [0]}),
        MemberSpec("m1", {T0}, assignment={T0: [1, 0, 5, -1, 0]}),
    ]
    exclusive = AssignmentSpec.build(members, topics)
    assert not exclusive.shared
    assert exclusive.current_partitions == (((0, 1),), ())
    shared = AssignmentSpec.build(members, topics, shared=True)
    shared.validate()
    assert shared.shared
    assert shared.current_topics == ((0,), (0,))
    assert shared.current_partitions == (((0, 1),), ((0,),))
    with pytest.raises(AssignmentSpecError):
        dataclasses.replace(shared, shared=False).validate()
    assert pickle.loads(pickle.dumps(shared)) == shared


def test_group_assignment_views_and_pickle() -> None:
    topics = [TopicMetadata(T0, "a", 4), TopicMetadata(T1, "b", 1)]
    members = [MemberSpec("x", {T0, T1}), MemberSpec("y", {T0}), MemberSpec("z", set())]
    result = UniformAssignor().assign(AssignmentSpec.build(members, topics))
    assert result.member("z") == {} and result.member("nobody") == {}
    assert result.member("x") == result.members["x"]
    assert sum(len(p) for m in result.members.values() for p in m.values()) == 5
    assert pickle.loads(pickle.dumps(result)) == result
    assert GroupAssignment.from_dict(result.members) == result


def test_empty_group() -> None:
    spec = AssignmentSpec.build([], [TopicMetadata(T0, "a", 3)])
    for name in ASSIGNORS:
        assert get_assignor(name).assign(spec).members == {}


@pytest.mark.slow
def test_bench_run_small() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    for argv in (
        ["--assignor", "uniform", "--subscriptions", "heterogeneous", "--incremental"],
        ["--assignor", "range", "--racks", "4"],
        ["--assignor", "lag", "--incremental"],
    ):
        args = parser.parse_args(
            [*argv, "--members", "20", "--topics", "10", "--partitions-per-topic", "5",
             "--runs", "3"]
        )
        result = bench.run(args)
        assert result["assignor"] == args.assignor
        assert result["members"] == 20
        min_ms, median_ms, max_ms = result["min_ms"], result["median_ms"], result["max_ms"]
        assert isinstance(min_ms, float) and isinstance(median_ms, float)
        assert isinstance(max_ms, float)
        assert 0 <= min_ms <= median_ms <= max_ms


def test_bench_main_prints_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "assignors.bench", "--members", "10", "--topics", "5",
         "--partitions-per-topic", "2", "--runs", "2"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert '"median_ms"' in out
