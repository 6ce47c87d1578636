"""Kafka's ``StandardAuthorizer``: ACLs indexed for lookups, and the decision for one action.

A request is allowed when its principal is a super user, or when an ALLOW ACL applies to it
and no DENY ACL does. An ACL applies when its resource pattern matches the resource (LITERAL:
the same name, or the ``*`` wildcard; PREFIXED: a prefix of the name), its principal is the
request's or ``User:*``, its host is the client's or ``*``, and its operation is the one asked
for or ALL (an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and ALTER_CONFIGS
allows DESCRIBE_CONFIGS; DENY ACLs imply nothing). With no ACL at all on the resource the answer
is ``allow.everyone.if.no.acl.found``; with ACLs on it that do not apply, it is DENY.

Lookups never scan every ACL: per resource type, LITERAL ACLs are found by name, the wildcard
by ``*``, and PREFIXED ACLs by the name's prefixes of the lengths some PREFIXED ACL has.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from coordinator.config import ServerConfig
from coordinator.config.server_config import STANDARD_AUTHORIZER

from .acl import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS,
                                       AclOperation.ALTER_CONFIGS})

Entries = dict[uuid.UUID, AccessControlEntry]


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (Kafka's
    ``getConfiguredSuperUsers``)."""
    return frozenset(v.strip() for v in (value or "").split(";") if v.strip())


def _applies(entry: AccessControlEntry, principal: str, host: str,
             operation: AclOperation) -> AclPermissionType | None:
    """The entry's permission if it applies to this principal, host and operation (Kafka's
    ``StandardAuthorizerData.findResult``)."""
    if entry.principal != principal and entry.principal != WILDCARD_PRINCIPAL:
        return None
    if entry.host != WILDCARD and entry.host != host:
        return None
    granted = entry.operation
    if granted is not AclOperation.ALL and granted is not operation:
        if entry.permission_type is not AclPermissionType.ALLOW:
            return None
        if operation is AclOperation.DESCRIBE:
            if granted not in _IMPLIES_DESCRIBE:
                return None
        elif operation is AclOperation.DESCRIBE_CONFIGS:
            if granted not in _IMPLIES_DESCRIBE_CONFIGS:
                return None
        else:
            return None
    return entry.permission_type


@dataclass(slots=True)
class _Section:
    """The ACLs of one resource type."""

    literal: dict[str, Entries] = field(default_factory=dict)
    prefixed: dict[str, Entries] = field(default_factory=dict)
    prefix_lengths: Counter[int] = field(default_factory=Counter)
    lengths: tuple[int, ...] = ()
    """The distinct lengths of the PREFIXED names, ascending (kept with the counter)."""

    def applicable(self, name: str) -> Iterator[Entries]:
        """The entries of every pattern that matches the resource ``name``."""
        found = self.literal.get(name)
        if found:
            yield found
        if name != WILDCARD:
            found = self.literal.get(WILDCARD)
            if found:
                yield found
        prefixed = self.prefixed
        for length in self.lengths:
            if length > len(name):
                break
            found = prefixed.get(name[:length])
            if found:
                yield found


class StandardAuthorizer:
    def __init__(self, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._by_id: dict[uuid.UUID, AclBinding] = {}
        self._ids: dict[AclBinding, uuid.UUID] = {}
        self._sections: dict[ResourceType, _Section] = {}

    @classmethod
    def from_config(cls, config: ServerConfig) -> StandardAuthorizer | None:
        """The authorizer ``authorizer.class.name`` names, or None (no authorization)."""
        if config["authorizer.class.name"] != STANDARD_AUTHORIZER:
            return None  # empty: no authorization (any other name fails the config check)
        return cls(parse_super_users(config["super.users"]),
                   bool(config["allow.everyone.if.no.acl.found"]))

    # --- the ACLs ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._by_id)

    def id_of(self, binding: AclBinding) -> uuid.UUID | None:
        return self._ids.get(binding)

    def get(self, acl_id: uuid.UUID) -> AclBinding | None:
        return self._by_id.get(acl_id)

    def add(self, acl_id: uuid.UUID, binding: AclBinding) -> None:
        if acl_id in self._by_id:
            self.remove(acl_id)
        self._by_id[acl_id] = binding
        self._ids.setdefault(binding, acl_id)
        pattern = binding.pattern
        section = self._sections.setdefault(pattern.resource_type, _Section())
        if pattern.pattern_type is PatternType.PREFIXED:
            if pattern.name not in section.prefixed:
                section.prefix_lengths[len(pattern.name)] += 1
                section.lengths = tuple(sorted(section.prefix_lengths))
            section.prefixed.setdefault(pattern.name, {})[acl_id] = binding.entry
        else:
            section.literal.setdefault(pattern.name, {})[acl_id] = binding.entry

    def remove(self, acl_id: uuid.UUID) -> AclBinding | None:
        binding = self._by_id.pop(acl_id, None)
        if binding is None:
            return None
        if self._ids.get(binding) == acl_id:
            del self._ids[binding]
            for other_id, other in self._by_id.items():  # a duplicate id of the same ACL
                if other == binding:
                    self._ids[binding] = other_id
                    break
        pattern = binding.pattern
        section = self._sections[pattern.resource_type]
        by_name = (section.prefixed if pattern.pattern_type is PatternType.PREFIXED
                   else section.literal)
        entries = by_name[pattern.name]
        del entries[acl_id]
        if not entries:
            del by_name[pattern.name]
            if pattern.pattern_type is PatternType.PREFIXED:
                length = len(pattern.name)
                section.prefix_lengths[length] -= 1
                if not section.prefix_lengths[length]:
                    del section.prefix_lengths[length]
                section.lengths = tuple(sorted(section.prefix_lengths))
        return binding

    def acls(self, wanted: AclBindingFilter) -> list[tuple[uuid.UUID, AclBinding]]:
        """Every ACL the filter matches, with its id."""
        if wanted.resource_type is ResourceType.ANY:
            candidates: Iterable[tuple[uuid.UUID, AclBinding]] = self._by_id.items()
        else:
            candidates = self._in_section(wanted.resource_type)
        return [(acl_id, b) for acl_id, b in candidates if wanted.matches(b)]

    def _in_section(self, resource_type: ResourceType) -> Iterator[tuple[uuid.UUID, AclBinding]]:
        section = self._sections.get(resource_type)
        if section is None:
            return
        for kind, by_name in ((PatternType.LITERAL, section.literal),
                              (PatternType.PREFIXED, section.prefixed)):
            for name, entries in by_name.items():
                pattern = ResourcePattern(resource_type, name, kind)
                for acl_id, entry in entries.items():
                    yield acl_id, AclBinding(pattern, entry)

    # --- decisions ---------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """May ``principal`` from ``host`` do ``operation`` on the resource (a literal name)?"""
        if principal in self.super_users:
            return True
        section = self._sections.get(resource_type)
        if section is None:
            return self.allow_everyone_if_no_acl_found
        found_acls = allowed = False
        for entries in section.applicable(name):
            found_acls = True
            for entry in entries.values():
                permission = _applies(entry, principal, host, operation)
                if permission is AclPermissionType.DENY:
                    return False
                if permission is AclPermissionType.ALLOW:
                    allowed = True
        if allowed:
            return True
        return not found_acls and self.allow_everyone_if_no_acl_found

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """May ``principal`` do ``operation`` on some resource of this type? Kafka's
        ``Authorizer.authorizeByResourceType`` (InitProducerId asks it for WRITE on a topic):
        an ALLOW on a pattern that no DENY of this principal dominates."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(),
                                             PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(),
                                              PatternType.PREFIXED: set()}
        wildcard_allow = False
        for _, binding in self._in_section(resource_type):
            entry, pattern = binding.entry, binding.pattern
            if entry.host not in (host, WILDCARD):
                continue
            if entry.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if entry.operation not in (operation, AclOperation.ALL):
                continue
            if entry.permission_type is AclPermissionType.DENY:
                if pattern.pattern_type is PatternType.LITERAL and pattern.name == WILDCARD:
                    return False
                deny[pattern.pattern_type].add(pattern.name)
            elif entry.permission_type is AclPermissionType.ALLOW:
                if pattern.pattern_type is PatternType.LITERAL and pattern.name == WILDCARD:
                    wildcard_allow = True
                else:
                    allow[pattern.pattern_type].add(pattern.name)
        if wildcard_allow:
            return True
        for kind, names in allow.items():
            for name in names:
                if kind is PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:i] in deny[PatternType.PREFIXED]
                           for i in range(1, len(name) + 1)):
                    return True
        return False
