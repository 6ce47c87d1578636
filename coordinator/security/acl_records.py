"""ACLs as Kafka's metadata records (``AccessControlEntry`` / ``RemoveAccessControlEntry`` in
``__cluster_metadata-0``), and their replay into the authorizer."""

from __future__ import annotations

import uuid
from typing import Any

from coordinator.observability.logs import get_logger
from storage.records import (
    AccessControlEntryKey,
    AccessControlEntryValue,
    RemoveAccessControlEntryKey,
    RemoveAccessControlEntryValue,
)

from .acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    from_code,
)
from .authorizer import StandardAuthorizer

log = get_logger("coordinator.security.acl_records")

Record = tuple[Any, Any]


def added(acl_id: uuid.UUID, binding: AclBinding) -> Record:
    pattern, entry = binding.pattern, binding.entry
    return AccessControlEntryKey(id=acl_id), AccessControlEntryValue(
        resource_type=int(pattern.resource_type), resource_name=pattern.name,
        pattern_type=int(pattern.pattern_type), principal=entry.principal, host=entry.host,
        operation=int(entry.operation), permission_type=int(entry.permission_type))


def removed(acl_id: uuid.UUID) -> Record:
    return RemoveAccessControlEntryKey(id=acl_id), RemoveAccessControlEntryValue()


def binding_of(value: AccessControlEntryValue) -> AclBinding:
    return AclBinding(
        ResourcePattern(from_code(ResourceType, value.resource_type), value.resource_name,
                        from_code(PatternType, value.pattern_type)),
        AccessControlEntry(value.principal, value.host,
                           from_code(AclOperation, value.operation),
                           from_code(AclPermissionType, value.permission_type)))


def replay(authorizer: StandardAuthorizer, key: Any, value: Any) -> bool:
    """Apply one ACL record to the authorizer; False if ``key`` is no ACL record."""
    if isinstance(key, AccessControlEntryKey):
        if value is None:
            authorizer.remove(key.id)
        else:
            authorizer.add(key.id, binding_of(value))
        return True
    if isinstance(key, RemoveAccessControlEntryKey):
        if authorizer.remove(key.id) is None:
            log.warning("acl removal of an unknown acl ignored", acl_id=str(key.id))
        return True
    return False
