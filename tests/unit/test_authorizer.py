"""The StandardAuthorizer (``coordinator/security/authorizer.py``) against Kafka's rules, and
against a brute-force model of them over random ACL sets (hypothesis)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.config import ConfigError, ServerConfig
from coordinator.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    bitfield,
    from_code,
    invalid_new_binding,
)
from coordinator.security.authorizer import StandardAuthorizer, parse_super_users

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
Op = AclOperation
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(name: str, op: AclOperation = Op.READ, permission: AclPermissionType = ALLOW,
        principal: str = ALICE, host: str = "*", pattern: PatternType = LITERAL,
        resource_type: ResourceType = TOPIC) -> AclBinding:
    return AclBinding(ResourcePattern(resource_type, name, pattern),
                      AccessControlEntry(principal, host, op, permission))


def authorizer(*bindings: AclBinding, super_users: Iterable[str] = (),
               allow_if_no_acl: bool = False) -> StandardAuthorizer:
    found = StandardAuthorizer(super_users, allow_if_no_acl)
    for binding in bindings:
        found.add(uuid.uuid4(), binding)
    return found


def may(auth: StandardAuthorizer, op: AclOperation, name: str, principal: str = ALICE,
        host: str = HOST, resource_type: ResourceType = TOPIC) -> bool:
    return auth.authorize(principal, host, op, resource_type, name)


# --- Kafka's rules, one at a time --------------------------------------------------------------
def test_a_literal_allow_allows_its_principal_operation_and_name_only() -> None:
    auth = authorizer(acl("orders"))
    assert may(auth, Op.READ, "orders")
    assert not may(auth, Op.WRITE, "orders")
    assert not may(auth, Op.READ, "orders", principal=BOB)
    assert not may(auth, Op.READ, "orders2")  # a literal name is not a prefix
    assert not may(auth, Op.READ, "orders", resource_type=GROUP)


def test_deny_wins_over_allow_whatever_the_pattern() -> None:
    auth = authorizer(acl("orders"), acl("ord", permission=DENY, pattern=PREFIXED))
    assert not may(auth, Op.READ, "orders")
    auth = authorizer(acl("*", op=Op.ALL), acl("orders", permission=DENY))
    assert not may(auth, Op.READ, "orders")
    assert may(auth, Op.READ, "payments")


def test_prefixed_literal_and_wildcard_patterns() -> None:
    auth = authorizer(acl("app-", pattern=PREFIXED), acl("*", op=Op.WRITE),
                      acl("exact", op=Op.DELETE))
    assert may(auth, Op.READ, "app-orders") and may(auth, Op.READ, "app-")
    assert not may(auth, Op.READ, "app") and not may(auth, Op.READ, "xapp-orders")
    assert may(auth, Op.WRITE, "anything") and may(auth, Op.WRITE, "*")
    assert may(auth, Op.DELETE, "exact") and not may(auth, Op.DELETE, "exactly")
    # a PREFIXED "*" is a prefix like any other, not a wildcard
    auth = authorizer(acl("*", pattern=PREFIXED))
    assert not may(auth, Op.READ, "orders") and may(auth, Op.READ, "*orders")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE])
def test_read_write_delete_alter_imply_describe(granted: AclOperation) -> None:
    assert may(authorizer(acl("t", op=granted)), Op.DESCRIBE, "t")


@pytest.mark.parametrize("granted", [Op.CREATE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                                     Op.IDEMPOTENT_WRITE, Op.CLUSTER_ACTION])
def test_other_operations_do_not_imply_describe(granted: AclOperation) -> None:
    assert not may(authorizer(acl("t", op=granted)), Op.DESCRIBE, "t")


def test_alter_configs_implies_describe_configs_and_all_implies_everything() -> None:
    assert may(authorizer(acl("t", op=Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS, "t")
    assert not may(authorizer(acl("t", op=Op.DESCRIBE_CONFIGS)), Op.ALTER_CONFIGS, "t")
    everything = authorizer(acl("t", op=Op.ALL))
    assert all(may(everything, op, "t") for op in Op if op > Op.ALL)


def test_deny_acls_imply_nothing() -> None:
    # DENY READ does not deny DESCRIBE, which an ALLOW of WRITE implies
    auth = authorizer(acl("t", op=Op.WRITE), acl("t", op=Op.READ, permission=DENY))
    assert may(auth, Op.DESCRIBE, "t") and not may(auth, Op.READ, "t")
    # DENY ALL denies everything
    auth = authorizer(acl("t", op=Op.ALL), acl("t", op=Op.ALL, permission=DENY))
    assert not any(may(auth, op, "t") for op in Op if op > Op.ALL)


def test_wildcard_principal_and_hosts() -> None:
    auth = authorizer(acl("t", principal="User:*"), acl("h", host=HOST))
    assert may(auth, Op.READ, "t", principal=BOB)
    assert may(auth, Op.READ, "t", principal="User:ANONYMOUS")
    assert may(auth, Op.READ, "h") and not may(auth, Op.READ, "h", host="10.0.0.2")


def test_super_users_are_allowed_everything_even_against_deny() -> None:
    auth = authorizer(acl("t", op=Op.ALL, permission=DENY, principal="User:*"),
                      super_users=parse_super_users(" User:admin ; User:ops;;"))
    assert auth.super_users == {"User:admin", "User:ops"}
    assert may(auth, Op.DELETE, "t", principal="User:admin")
    assert may(auth, Op.ALTER, CLUSTER_NAME, principal="User:ops", resource_type=CLUSTER)
    assert not may(auth, Op.READ, "t")


def test_allow_everyone_if_no_acl_found_applies_only_to_resources_without_acls() -> None:
    auth = authorizer(acl("t", principal=BOB), allow_if_no_acl=True)
    assert may(auth, Op.WRITE, "other")  # no ACL at all on it
    assert may(auth, Op.READ, "g", resource_type=GROUP)  # no ACL of the type at all
    assert not may(auth, Op.READ, "t")  # an ACL on it, for someone else
    assert not may(authorizer(), Op.READ, "t")  # the default: false


def test_removing_acls_restores_the_decisions() -> None:
    auth = StandardAuthorizer()
    first, second = uuid.uuid4(), uuid.uuid4()
    auth.add(first, acl("app-", pattern=PREFIXED))
    auth.add(second, acl("app-x", pattern=PREFIXED, permission=DENY))
    assert not may(auth, Op.READ, "app-x1") and may(auth, Op.READ, "app-y")
    assert auth.remove(second) == acl("app-x", pattern=PREFIXED, permission=DENY)
    assert may(auth, Op.READ, "app-x1")
    assert auth.remove(second) is None
    auth.remove(first)
    assert len(auth) == 0 and not may(auth, Op.READ, "app-y")
    assert auth.acls(AclBindingFilter()) == []


def test_authorize_by_resource_type() -> None:
    # Kafka's default Authorizer.authorizeByResourceType (InitProducerId: WRITE on any topic)
    assert authorizer(acl("a", op=Op.WRITE)).authorize_by_resource_type(ALICE, HOST, Op.WRITE,
                                                                      TOPIC)
    assert not authorizer(acl("a", op=Op.READ)).authorize_by_resource_type(ALICE, HOST,
                                                                          Op.WRITE, TOPIC)
    dominated = authorizer(acl("ab", op=Op.WRITE),
                           acl("a", op=Op.WRITE, permission=DENY, pattern=PREFIXED))
    assert not dominated.authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)
    wildcard_deny = authorizer(acl("*", op=Op.WRITE), acl("*", op=Op.WRITE, permission=DENY))
    assert not wildcard_deny.authorize_by_resource_type(ALICE, HOST, Op.WRITE, TOPIC)
    assert authorizer(super_users={ALICE}).authorize_by_resource_type(ALICE, HOST, Op.WRITE,
                                                                      TOPIC)
    assert authorizer(allow_if_no_acl=True).authorize_by_resource_type(ALICE, HOST, Op.WRITE,
                                                                       TOPIC)


# --- filters and validation --------------------------------------------------------------------
def test_binding_filters_match_as_kafkas() -> None:
    prefixed = acl("app-", pattern=PREFIXED)
    literal, wildcard = acl("app-orders"), acl("*")
    match = AclBindingFilter(TOPIC, "app-orders", PatternType.MATCH)
    assert all(match.matches(b) for b in (prefixed, literal, wildcard))
    assert not match.matches(acl("app-payments"))
    assert not AclBindingFilter(TOPIC, "app-orders", PatternType.ANY).matches(prefixed)
    assert AclBindingFilter(TOPIC, "app-", PatternType.ANY).matches(prefixed)
    assert not AclBindingFilter(TOPIC, None, LITERAL).matches(prefixed)
    assert not AclBindingFilter(GROUP).matches(literal)
    assert AclBindingFilter(principal=ALICE, operation=Op.READ,
                            permission_type=ALLOW).matches(literal)
    assert not AclBindingFilter(host="1.2.3.4").matches(literal)
    assert AclBindingFilter(ResourceType.UNKNOWN).unknown_part() == "Unknown patternFilter."
    assert AclBindingFilter(operation=Op.UNKNOWN).unknown_part() == "Unknown entryFilter."
    assert from_code(PatternType, 99) is PatternType.UNKNOWN


@pytest.mark.parametrize("binding, problem", [
    (acl("t", resource_type=ResourceType.ANY), "Invalid resourceType ANY"),
    (acl("t", pattern=PatternType.MATCH), "Invalid patternType MATCH"),
    (acl("t", op=Op.ANY), "Invalid operation ANY"),
    (acl("t", permission=AclPermissionType.ANY), "Invalid permissionType ANY"),
    (acl("c", resource_type=CLUSTER),
     "The only valid name for the CLUSTER resource is kafka-cluster"),
    (acl(""), "Invalid empty resource name"),
    (acl("t", principal="alice"),
     "expected a string in format principalType:principalName but got alice"),
])
def test_new_bindings_kafka_refuses(binding: AclBinding, problem: str) -> None:
    assert invalid_new_binding(binding) == problem


def test_valid_bindings_pass() -> None:
    assert invalid_new_binding(acl(CLUSTER_NAME, op=Op.ALTER, resource_type=CLUSTER)) is None
    assert invalid_new_binding(acl("app-", pattern=PREFIXED, permission=DENY)) is None


def test_configs() -> None:
    config = ServerConfig.from_sources({})
    assert StandardAuthorizer.from_config(config) is None  # the default: no authorization
    config = ServerConfig.from_sources({
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ops", "allow.everyone.if.no.acl.found": "true"})
    found = StandardAuthorizer.from_config(config)
    assert found is not None and found.super_users == {"User:admin", "User:ops"}
    assert found.allow_everyone_if_no_acl_found
    with pytest.raises(ConfigError, match=r"super\.users.*but got ops"):
        ServerConfig.from_sources({"super.users": "User:admin;ops"})
    with pytest.raises(ConfigError, match=r"authorizer\.class\.name"):
        ServerConfig.from_sources({"authorizer.class.name": "kafka.security.Nope"})


def test_authorized_operation_bitfields() -> None:
    assert bitfield([Op.READ, Op.DESCRIBE]) == (1 << 3) | (1 << 8)


# --- against a brute-force model ---------------------------------------------------------------
IMPLIES = {Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE},
           Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}}


def model(bindings: list[AclBinding], super_users: set[str], allow_if_no_acl: bool,
          principal: str, host: str, op: AclOperation, resource_type: ResourceType,
          name: str) -> bool:
    """Kafka's rules read off its documentation, checking every ACL."""
    if principal in super_users:
        return True

    def on_resource(b: AclBinding) -> bool:
        p = b.pattern
        if p.resource_type is not resource_type:
            return False
        if p.pattern_type is LITERAL:
            return p.name in (name, "*")
        return name.startswith(p.name)

    def applies(e: AccessControlEntry) -> bool:
        if e.principal not in (principal, "User:*") or e.host not in (host, "*"):
            return False
        if e.operation in (op, Op.ALL):
            return True
        return e.permission_type is ALLOW and e.operation in IMPLIES.get(op, set())

    relevant = [b for b in bindings if on_resource(b)]
    if any(applies(b.entry) and b.entry.permission_type is DENY for b in relevant):
        return False
    if any(applies(b.entry) and b.entry.permission_type is ALLOW for b in relevant):
        return True
    return allow_if_no_acl and not relevant


NAMES = st.text(alphabet="ab*", min_size=1, max_size=4)
PRINCIPALS = st.sampled_from([ALICE, BOB, "User:*"])
OPERATIONS = st.sampled_from([op for op in Op if op > Op.ANY and op < Op.CREATE_TOKENS])
BINDINGS = st.builds(
    lambda name, op, permission, principal, host, pattern, rtype: acl(
        name, op, permission, principal, host, pattern, rtype),
    NAMES, OPERATIONS, st.sampled_from([ALLOW, DENY]), PRINCIPALS,
    st.sampled_from(["*", HOST, "10.0.0.2"]), st.sampled_from([LITERAL, PREFIXED]),
    st.sampled_from([TOPIC, GROUP]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(bindings=st.lists(BINDINGS, max_size=12), removed=st.sets(st.integers(0, 11)),
       super_users=st.sets(st.sampled_from([ALICE, BOB])), allow_if_no_acl=st.booleans(),
       principal=st.sampled_from([ALICE, BOB]), host=st.sampled_from([HOST, "10.0.0.2"]),
       op=OPERATIONS, resource_type=st.sampled_from([TOPIC, GROUP]),
       name=st.text(alphabet="ab*", min_size=1, max_size=5))
def test_decisions_are_kafkas(bindings: list[AclBinding], removed: set[int],
                              super_users: set[str], allow_if_no_acl: bool, principal: str,
                              host: str, op: AclOperation, resource_type: ResourceType,
                              name: str) -> None:
    auth = StandardAuthorizer(super_users, allow_if_no_acl)
    ids = [uuid.uuid4() for _ in bindings]
    for acl_id, binding in zip(ids, bindings, strict=True):
        auth.add(acl_id, binding)
    for i in removed:
        if i < len(ids):
            auth.remove(ids[i])
    kept = [b for i, b in enumerate(bindings) if i not in removed]
    expected = model(kept, super_users, allow_if_no_acl, principal, host, op, resource_type,
                     name)
    assert auth.authorize(principal, host, op, resource_type, name) == expected
    # the order ACLs were added in does not matter
    reordered = StandardAuthorizer(super_users, allow_if_no_acl)
    for binding in reversed(kept):
        reordered.add(uuid.uuid4(), binding)
    assert reordered.authorize(principal, host, op, resource_type, name) == expected
    assert sorted(map(repr, (b for _, b in auth.acls(AclBindingFilter())))) == \
        sorted(map(repr, kept))


@settings(max_examples=200, deadline=None)
@given(bindings=st.lists(BINDINGS, max_size=8), principal=st.sampled_from([ALICE, BOB]),
       op=OPERATIONS, name=st.text(alphabet="ab", min_size=1, max_size=4))
def test_a_matching_deny_always_denies_and_super_users_are_always_allowed(
        bindings: list[AclBinding], principal: str, op: AclOperation, name: str) -> None:
    auth = authorizer(*bindings, acl(name[:1], op=op, permission=DENY, principal=principal,
                                     pattern=PREFIXED))
    assert not auth.authorize(principal, HOST, op, TOPIC, name)
    auth.super_users = frozenset({principal})
    assert auth.authorize(principal, HOST, op, TOPIC, name)
