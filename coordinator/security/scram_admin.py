"""DescribeUserScramCredentials and AlterUserScramCredentials without the wire: Kafka's
``ScramImage.describe`` and ``ScramControlManager.alterCredentials``, with their checks, error
codes and messages. ``alter`` returns the records to write; nothing changes until they are
written and replayed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from protocol import ErrorCode

from .credentials import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    Record,
    ScramCredentials,
    ScramMechanism,
    credential,
    record,
    removal,
)


@dataclass(frozen=True, slots=True)
class UserResult:
    user: str
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    credentials: tuple[tuple[ScramMechanism, int], ...] = ()
    """(mechanism, iterations) per credential the user has (Describe only)."""


def describe(store: ScramCredentials, users: Sequence[str] | None) -> list[UserResult]:
    """Every user with credentials when ``users`` is None or empty, else the ones named."""
    if not users:
        counts = dict.fromkeys(store.users(), 1)
    else:
        counts = {}
        for user in users:
            counts[user] = counts.get(user, 0) + 1
    results = []
    for user, count in counts.items():
        if count > 1:
            results.append(UserResult(
                user, ErrorCode.duplicate_resource,
                f"Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {user}"))
            continue
        found = store.of_user(user)
        if not found:
            results.append(UserResult(
                user, ErrorCode.resource_not_found,
                f"Attempt to describe a user credential that does not exist: {user}"))
            continue
        results.append(UserResult(user, credentials=tuple(
            (mechanism, found[mechanism].iterations) for mechanism in sorted(found))))
    return results


@dataclass(frozen=True, slots=True)
class Deletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class Upsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes = field(repr=False)


def _validate_name_and_mechanism(name: str, mechanism: ScramMechanism) -> UserResult | None:
    if not name:
        return UserResult(name, ErrorCode.unacceptable_credential, "Username must not be empty")
    if not mechanism:
        return UserResult(name, ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    return None


def _duplicate(name: str) -> UserResult:
    return UserResult(name, ErrorCode.duplicate_resource,
                      "A user credential cannot be altered twice in the same request")


def alter(store: ScramCredentials, deletions: Iterable[Deletion],
          upsertions: Iterable[Upsertion]) -> tuple[list[Record], list[UserResult]]:
    """(records to write, one result per user named): a user named twice in one request gets
    DUPLICATE_RESOURCE and none of its changes; each change is checked on its own."""
    errors: dict[str, UserResult] = {}
    to_delete: dict[str, Deletion] = {}
    to_upsert: dict[str, Upsertion] = {}
    for deletion in deletions:
        if deletion.name in errors:
            continue
        if to_delete.pop(deletion.name, None) is not None:
            errors[deletion.name] = _duplicate(deletion.name)
            continue
        mechanism = ScramMechanism.of(deletion.mechanism)
        error = _validate_name_and_mechanism(deletion.name, mechanism)
        if error is None and store.get(deletion.name, mechanism) is None:
            error = UserResult(deletion.name, ErrorCode.resource_not_found,
                               "Attempt to delete a user credential that does not exist")
        if error is not None:
            errors[deletion.name] = error
        else:
            to_delete[deletion.name] = deletion
    for upsertion in upsertions:
        if upsertion.name in errors:
            continue
        if (to_delete.pop(upsertion.name, None) is not None
                or to_upsert.pop(upsertion.name, None) is not None):
            errors[upsertion.name] = _duplicate(upsertion.name)
            continue
        mechanism = ScramMechanism.of(upsertion.mechanism)
        error = _validate_name_and_mechanism(upsertion.name, mechanism)
        if error is None and upsertion.iterations < MIN_ITERATIONS:
            error = UserResult(upsertion.name, ErrorCode.unacceptable_credential,
                               "Too few iterations")
        elif error is None and upsertion.iterations > MAX_ITERATIONS:
            error = UserResult(upsertion.name, ErrorCode.unacceptable_credential,
                               "Too many iterations")
        if error is not None:
            errors[upsertion.name] = error
        else:
            to_upsert[upsertion.name] = upsertion
    records: list[Record] = []
    results: list[UserResult] = []
    for deletion in to_delete.values():
        records.append(removal(deletion.name, ScramMechanism.of(deletion.mechanism)))
        results.append(UserResult(deletion.name))
    for upsertion in to_upsert.values():
        mechanism = ScramMechanism.of(upsertion.mechanism)
        records.append(record(upsertion.name, mechanism, credential(
            mechanism, upsertion.salt, upsertion.salted_password, upsertion.iterations)))
        results.append(UserResult(upsertion.name))
    results.extend(errors.values())
    return records, results
