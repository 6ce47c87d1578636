"""Kafka's ACL model: resource patterns, access control entries, bindings and binding filters.

The enums carry Kafka's wire codes (``org.apache.kafka.common.acl`` / ``.resource``); a code
Kafka does not know reads as ``UNKNOWN``, as ``fromCode`` does. ``AclBindingFilter.matches`` is
Kafka's ``ResourcePatternFilter.matches`` and ``AccessControlEntryFilter.matches``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


E = TypeVar("E", ResourceType, PatternType, AclOperation, AclPermissionType)


def from_code(enum: type[E], code: int) -> E:
    """The member with this wire code, or ``UNKNOWN`` (Kafka's ``fromCode``)."""
    try:
        return enum(code)
    except ValueError:
        return enum(0)


CLUSTER_NAME = "kafka-cluster"
"""The one name of the CLUSTER resource."""
WILDCARD = "*"
"""A LITERAL resource name, or an ACL host, that matches any."""
WILDCARD_PRINCIPAL = "User:*"
"""The ACL principal that matches any principal."""


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Which bindings DescribeAcls lists and DeleteAcls removes: None and ANY match anything;
    MATCH matches the patterns that would apply to the named resource."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def unknown_part(self) -> str | None:
        """Why Kafka's controller refuses this filter (an UNKNOWN element), or None."""
        if (self.resource_type is ResourceType.UNKNOWN
                or self.pattern_type is PatternType.UNKNOWN):
            return "Unknown patternFilter."
        if (self.operation is AclOperation.UNKNOWN
                or self.permission_type is AclPermissionType.UNKNOWN):
            return "Unknown entryFilter."
        return None

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type is not ResourceType.ANY \
                and self.resource_type is not pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) \
                and self.pattern_type is not pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        # MATCH: the patterns that apply to the resource named ``name``
        if pattern.pattern_type is PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD
        if pattern.pattern_type is PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        return False

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation is AclOperation.ANY or self.operation is entry.operation)
                and (self.permission_type is AclPermissionType.ANY
                     or self.permission_type is entry.permission_type))


_OPS = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    # Kafka's AclEntry.supportedOperations: what authorized-operations bitfields cover
    ResourceType.TOPIC: (_OPS.READ, _OPS.WRITE, _OPS.CREATE, _OPS.DESCRIBE, _OPS.DELETE,
                         _OPS.ALTER, _OPS.DESCRIBE_CONFIGS, _OPS.ALTER_CONFIGS),
    ResourceType.GROUP: (_OPS.READ, _OPS.DESCRIBE, _OPS.DELETE, _OPS.DESCRIBE_CONFIGS,
                         _OPS.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_OPS.CREATE, _OPS.CLUSTER_ACTION, _OPS.DESCRIBE_CONFIGS,
                           _OPS.ALTER_CONFIGS, _OPS.IDEMPOTENT_WRITE, _OPS.ALTER, _OPS.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_OPS.DESCRIBE, _OPS.WRITE, _OPS.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (_OPS.DESCRIBE,),
    ResourceType.USER: (_OPS.CREATE_TOKENS, _OPS.DESCRIBE_TOKENS),
}


def bitfield(operations: Iterable[AclOperation]) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``code`` set for each operation."""
    field = 0
    for operation in operations:
        field |= 1 << int(operation)
    return field


def parse_principal(text: str | None) -> tuple[str, str]:
    """(type, name) of ``Type:name``; ``ValueError`` with Kafka's message otherwise."""
    if text:
        kind, sep, name = text.partition(":")
        if sep:
            return kind, name
    raise ValueError("expected a string in format principalType:principalName but got "
                     f"{text}")


def invalid_new_binding(binding: AclBinding) -> str | None:
    """Why CreateAcls refuses this binding (INVALID_REQUEST), as Kafka's ``AclApis`` and
    ``AclControlManager.validateNewAcl`` do, or None."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {pattern.resource_type.name}"
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {pattern.pattern_type.name}"
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {entry.operation.name}"
    if entry.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {entry.permission_type.name}"
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not pattern.name:
        return "Invalid empty resource name"
    try:
        parse_principal(entry.principal)
    except ValueError as exc:
        return str(exc)
    return None
