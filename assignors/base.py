"""The assignor interface (KIP-848 ``PartitionAssignor``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from assignors.spec import AssignmentSpec, GroupAssignment


class PartitionAssignorError(Exception):
    """The assignor cannot compute an assignment for this spec."""


class PartitionAssignor(ABC):
    """A server-side assignor: a pure, deterministic function of the spec.

    Instances hold only their (picklable) options, so one can be shipped to a worker
    process together with the spec.
    """

    name: ClassVar[str]

    @abstractmethod
    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        """Compute the target assignment of every member of ``spec``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
