"""The target assignment of a share group: when a new one is due (seed 000's batching), the
assignor job that computes it (run inline or offloaded), and the records of its result.

Only initialized share partitions are assignable (ShareGroupStatePartitionMetadata); the
heartbeat initializes the partitions of every subscribed topic before it asks for a target, so
here they are all the subscribed topics' partitions.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence

from coordinator.groups.common.assignor_job import (
    JobResult,
    PreparedJob,
    TopicIndexAssignment,
    build_job,
    to_assignment,
)
from coordinator.groups.modern.target import changed_targets
from coordinator.runtime.result import Record

from . import records
from .model import Assignment, ShareGroup, ShareGroupMember, SubscribedTopic


def prepare(group: ShareGroup, group_epoch: int, assignor: str,
            members: Mapping[str, ShareGroupMember], targets: Mapping[str, Assignment],
            metadata: Mapping[str, SubscribedTopic]) -> PreparedJob:
    """The assignor job for ``members`` (as they will be) from their current ``targets``."""
    return build_job(group.group_id, group_epoch, assignor, members, targets, metadata,
                     cache=group.job_targets)


def target_records(group: ShareGroup, prepared: PreparedJob,
                   changed: Sequence[tuple[str, TopicIndexAssignment]],
                   members: Mapping[str, ShareGroupMember]
                   ) -> tuple[dict[str, Assignment], list[Record]]:
    """The new targets of the members still in ``members`` and their records."""
    return changed_targets(group, changed, members,
                           lambda pairs: to_assignment(pairs, prepared.topic_ids),
                           operator.eq, records.target_member)


def result_records(group: ShareGroup, prepared: PreparedJob, outcome: JobResult,
                   members: Mapping[str, ShareGroupMember], now_ms: int
                   ) -> tuple[dict[str, Assignment], list[Record]]:
    """A finished run's records: the changed targets, then the target metadata with the run's
    epoch and finish time (seed 000)."""
    new, out = target_records(group, prepared, outcome.changed, members)
    out.append(records.target_metadata(group.group_id, prepared.job.group_epoch, now_ms))
    return new, out
