"""What CreateAcls and DeleteAcls change: checks with Kafka's errors, and the records to write.

As Kafka's ``AclControlManager``: a binding that exists already is accepted without a record; a
binding matched by several delete filters is removed once and reported for each filter. The
caller writes the records, then replays them into the authorizer, then answers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from protocol import ErrorCode

from .acl import AclBinding, AclBindingFilter, invalid_new_binding
from .acl_records import Record, added, removed
from .authorizer import StandardAuthorizer


@dataclass(frozen=True, slots=True)
class Outcome:
    error: ErrorCode = ErrorCode.none
    message: str | None = None


@dataclass(slots=True)
class CreatePlan:
    outcomes: list[Outcome] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)


@dataclass(slots=True)
class DeletePlan:
    outcomes: list[tuple[Outcome, list[AclBinding]]] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)


def plan_create(authorizer: StandardAuthorizer, bindings: list[AclBinding]) -> CreatePlan:
    plan = CreatePlan()
    planned: set[AclBinding] = set()
    for binding in bindings:
        problem = invalid_new_binding(binding)
        if problem is not None:
            plan.outcomes.append(Outcome(ErrorCode.invalid_request, problem))
            continue
        if authorizer.id_of(binding) is None and binding not in planned:
            planned.add(binding)
            acl_id = uuid.uuid4()
            while authorizer.get(acl_id) is not None:  # pragma: no cover - 2**-122
                acl_id = uuid.uuid4()
            plan.records.append(added(acl_id, binding))
        plan.outcomes.append(Outcome())
    return plan


def plan_delete(authorizer: StandardAuthorizer, filters: list[AclBindingFilter]) -> DeletePlan:
    plan = DeletePlan()
    removing: set[uuid.UUID] = set()
    for wanted in filters:
        problem = wanted.unknown_part()
        if problem is not None:
            plan.outcomes.append((Outcome(ErrorCode.invalid_request, problem), []))
            continue
        matched = authorizer.acls(wanted)
        for acl_id, _ in matched:
            if acl_id not in removing:
                removing.add(acl_id)
                plan.records.append(removed(acl_id))
        plan.outcomes.append((Outcome(), [binding for _, binding in matched]))
    return plan
