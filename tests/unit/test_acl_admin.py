"""What CreateAcls and DeleteAcls write (``coordinator/security/acl_admin.py``) and the replay of
those records (``coordinator/security/acl_records.py``), through the store's codec."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from coordinator.metadata.image import MetadataImage
from coordinator.metadata.log import MetadataLog
from coordinator.runtime.clock import SystemClock
from coordinator.security import acl_records
from coordinator.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from coordinator.security.acl_admin import plan_create, plan_delete
from coordinator.security.authorizer import StandardAuthorizer
from protocol import ErrorCode
from storage.records import (
    AccessControlEntryKey,
    RemoveAccessControlEntryKey,
    decode_record,
    encode_record,
)


def binding(name: str, principal: str = "User:alice",
            pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType.TOPIC, name, pattern),
                      AccessControlEntry(principal, "*", AclOperation.READ,
                                         AclPermissionType.ALLOW))


def apply(auth: StandardAuthorizer, records: list[tuple[object, object]]) -> None:
    for key, value in records:
        # through the codec, as the metadata log stores them
        decoded_key, decoded_value = decode_record(*encode_record(key, value))
        assert acl_records.replay(auth, decoded_key, decoded_value)


def test_create_writes_one_record_per_new_binding() -> None:
    auth = StandardAuthorizer()
    plan = plan_create(auth, [binding("a"), binding("a"), binding(""), binding("b")])
    assert [o.error for o in plan.outcomes] == [ErrorCode.none, ErrorCode.none,
                                                ErrorCode.invalid_request, ErrorCode.none]
    assert plan.outcomes[2].message == "Invalid empty resource name"
    assert [type(k) for k, _ in plan.records] == [AccessControlEntryKey] * 2
    apply(auth, plan.records)
    assert len(auth) == 2
    # creating an existing ACL again succeeds and writes nothing
    again = plan_create(auth, [binding("a")])
    assert again.records == [] and again.outcomes[0].error is ErrorCode.none


def test_delete_removes_each_match_once_and_reports_it_per_filter() -> None:
    auth = StandardAuthorizer()
    apply(auth, plan_create(auth, [binding("a"), binding("b"), binding("a", "User:bob"),
                                   binding("a", pattern=PatternType.PREFIXED)]).records)
    alice = AclBindingFilter(principal="User:alice")
    literal_a = AclBindingFilter(ResourceType.TOPIC, "a", PatternType.LITERAL)
    plan = plan_delete(auth, [alice, literal_a, AclBindingFilter(ResourceType.UNKNOWN)])
    (first, alices), (second, literals), (third, none) = plan.outcomes
    assert first.error is second.error is ErrorCode.none
    assert sorted(b.pattern.name for b in alices) == ["a", "a", "b"]
    assert sorted(b.entry.principal for b in literals) == ["User:alice", "User:bob"]
    assert third.error is ErrorCode.invalid_request and none == []
    assert third.message == "Unknown patternFilter."
    assert [type(k) for k, _ in plan.records] == [RemoveAccessControlEntryKey] * 4
    apply(auth, plan.records)
    assert len(auth) == 0


def test_acls_survive_a_reopen_of_the_metadata_log(tmp_path: Path) -> None:
    auth = StandardAuthorizer()
    log = MetadataLog.open(tmp_path, MetadataImage(), SystemClock())
    created = plan_create(auth, [binding("a"), binding("b")])
    removed = acl_records.removed(next(k.id for k, _ in created.records))
    asyncio.run(log.write([*created.records, removed]))
    log.close()
    again = StandardAuthorizer()
    MetadataLog.open(tmp_path, MetadataImage(), SystemClock(),
                     lambda key, value: acl_records.replay(again, key, value)).close()
    assert [b.pattern.name for _, b in again.acls(AclBindingFilter())] == ["b"]
    # an unknown removal is logged and ignored
    assert acl_records.replay(again, RemoveAccessControlEntryKey(id=uuid.uuid4()), None)
    assert not acl_records.replay(again, object(), None)
