"""The ``uniform`` assignor: balanced, sticky, rack-aware, solved component by component."""

from __future__ import annotations

from collections.abc import Sequence

from assignors.base import PartitionAssignor
from assignors.spec import AssignmentSpec, GroupAssignment, Partitions
from assignors.structure import components
from assignors.uniform_heterogeneous import assign_heterogeneous
from assignors.uniform_homogeneous import assign_homogeneous


class UniformAssignor(PartitionAssignor):
    """Spreads partitions evenly over members, moving as few as balance requires.

    The group is split into components that share no topic; a component whose members all
    have the same subscription is solved by arithmetic on counts (member partition counts
    differ by at most one), any other on counts per member and topic
    (:mod:`assignors.uniform_heterogeneous`): as balanced as the subscriptions allow (no
    chain of hand-overs leads from a member to one with two partitions fewer, so no holder
    of a topic ends more than one partition above any subscriber of that topic).
    """

    name = "uniform"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        out_topics: list[Sequence[int]] = [()] * spec.member_count
        out_parts: list[Sequence[Partitions]] = [()] * spec.member_count
        for comp in components(spec):
            if comp.homogeneous:
                assign_homogeneous(spec, comp.members, comp.topics, out_topics, out_parts)
            else:
                assign_heterogeneous(spec, comp, out_topics, out_parts)
        return GroupAssignment(spec.member_ids, spec.topic_ids, out_topics, out_parts)
