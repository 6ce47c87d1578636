"""Which group and member a client is: read from the coordinator partitions' groups (never
changed here), for clients whose payload does not say them: a member is this client's when its
client id and host are the client's, and no other member's are; a group id the client sent
narrows the search to that group."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def _members(group: Any) -> Iterator[tuple[str, Any]]:
    members = getattr(group, "members", None)
    if isinstance(members, dict):
        yield from members.items()


def _host(member: Any) -> str:
    host = getattr(member, "client_host", "") or ""
    return host.lstrip("/")


def find(shards: Iterable[Any], client_id: str, address: str, group_hint: str | None = None
         ) -> tuple[str, str] | None:
    """(group id, member id) of the client, or None when no member is its alone."""
    found: list[tuple[str, str]] = []
    for shard in shards:
        groups = getattr(shard, "groups", None)
        if not isinstance(groups, dict):
            continue
        if group_hint is not None:
            group = groups.get(group_hint)
            candidates = [] if group is None else [(group_hint, group)]
        else:
            candidates = list(groups.items())
        for group_id, group in candidates:
            for member_id, member in _members(group):
                if getattr(member, "client_id", None) == client_id and _host(member) == address:
                    found.append((group_id, member_id))
    return found[0] if len(found) == 1 else None
