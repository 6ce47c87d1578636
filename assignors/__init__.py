"""Server-side partition assignors (KIP-848 ``PartitionAssignor``): uniform, range, lag for
consumer groups; simple for share groups (KIP-932); the sticky task assignor for streams groups
(KIP-1071).

Pure functions of a compact :class:`AssignmentSpec`; nothing here imports the rest of the
coordinator.
"""

from __future__ import annotations

from assignors.base import PartitionAssignor, PartitionAssignorError
from assignors.lag import LagAssignor, partition_lags
from assignors.options import (
    DEFAULT_LAG_OFFSET_RESET,
    DEFAULT_LAG_STICKINESS_TOLERANCE,
    LAG_OFFSET_RESET_CONFIG,
    LAG_STICKINESS_TOLERANCE_CONFIG,
    MAX_LAG_STICKINESS_TOLERANCE,
    MIN_LAG_STICKINESS_TOLERANCE,
    OffsetReset,
)
from assignors.range_assignor import RangeAssignor
from assignors.registry import (
    ASSIGNORS,
    DEFAULT_ASSIGNORS,
    DEFAULT_SHARE_ASSIGNOR,
    DEFAULT_TASK_ASSIGNOR,
    SHARE_ASSIGNORS,
    TASK_ASSIGNORS,
    UnknownAssignorError,
    get_assignor,
    get_task_assignor,
)
from assignors.simple import SimpleAssignor
from assignors.spec import (
    NO_OFFSET,
    NO_RACK,
    AssignmentSpec,
    AssignmentSpecError,
    GroupAssignment,
    MemberSpec,
    PartitionOffsets,
    Partitions,
    TopicId,
    TopicMetadata,
)
from assignors.sticky_task import StickyTaskAssignor
from assignors.task_spec import (
    MemberTaskAssignment,
    SubtopologyTasks,
    TaskAssignment,
    TaskAssignmentSpec,
    TaskAssignmentSpecError,
    TaskMember,
)
from assignors.uniform import UniformAssignor

__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNORS",
    "DEFAULT_LAG_OFFSET_RESET",
    "DEFAULT_LAG_STICKINESS_TOLERANCE",
    "DEFAULT_SHARE_ASSIGNOR",
    "DEFAULT_TASK_ASSIGNOR",
    "LAG_OFFSET_RESET_CONFIG",
    "LAG_STICKINESS_TOLERANCE_CONFIG",
    "MAX_LAG_STICKINESS_TOLERANCE",
    "MIN_LAG_STICKINESS_TOLERANCE",
    "NO_OFFSET",
    "NO_RACK",
    "SHARE_ASSIGNORS",
    "TASK_ASSIGNORS",
    "AssignmentSpec",
    "AssignmentSpecError",
    "GroupAssignment",
    "LagAssignor",
    "MemberSpec",
    "MemberTaskAssignment",
    "OffsetReset",
    "PartitionAssignor",
    "PartitionAssignorError",
    "PartitionOffsets",
    "Partitions",
    "RangeAssignor",
    "SimpleAssignor",
    "StickyTaskAssignor",
    "SubtopologyTasks",
    "TaskAssignment",
    "TaskAssignmentSpec",
    "TaskAssignmentSpecError",
    "TaskMember",
    "TopicId",
    "TopicMetadata",
    "UniformAssignor",
    "UnknownAssignorError",
    "get_assignor",
    "get_task_assignor",
    "partition_lags",
]
