"""Fault rules: what the control endpoint's ``POST /faults`` asks for, and their matching.

A rule has a kind and a filter. The filter: the API (Kafka's name, ``OffsetCommit``; omitted =
any API but ApiVersions), the group id (any of the group ids the request's body names:
``group_id``, ``groups``, ``group_ids``, ``groups_names``, FindCoordinator's group keys), the
member id (``member_id``, and LeaveGroup's ``members``) and the client id (the request header's).
The kinds:

* ``error``: the request is answered with the error (``responses.error_body``: the top-level
  error code, or each entity's where the response has none, as Kafka answers) and not handled;
* ``delay``: the request is handled, and its answer held for ``delay_ms`` (other connections go
  on; later answers on the same connection wait too, as Kafka answers in order);
* ``close``: the connection is closed instead of answering (once, unless ``count`` says more);
* ``freeze``: a member's heartbeats (Heartbeat, ConsumerGroupHeartbeat, ShareGroupHeartbeat,
  StreamsGroupHeartbeat) are held, unprocessed and unanswered, until the coordinator expired the
  member's session and the group settled without it (Stable or Empty: the other members hold
  the target computed without it). The coordinator sees no heartbeat, so the member's partitions
  move to the others after its session timeout and not before. Then the held heartbeats are
  handled and answered, which tells the client it was fenced (UNKNOWN_MEMBER_ID,
  FENCED_MEMBER_EPOCH) so that it rejoins. A client whose own request timeout is shorter than
  the session (librdkafka times a ConsumerGroupHeartbeat out after about two heartbeat
  intervals) retries, on a new connection: its retries are held too. The member's other
  requests go through, but answers behind a held heartbeat on its connection wait with it. The
  rule ends then (or after ``seconds``, or when deleted: the held heartbeats are then handled
  as usual), at the latest ``FREEZE_SETTLE_MAX_S`` after the session expired;
* ``unavailable``: every request naming the group is answered NOT_COORDINATOR (or
  COORDINATOR_LOAD_IN_PROGRESS); with NOT_COORDINATOR, FindCoordinator for the group answers
  COORDINATOR_NOT_AVAILABLE (no node is its coordinator), so clients look for the coordinator
  until the rule ends; while "loading", FindCoordinator answers as usual (this node, as Kafka's
  does while a coordinator partition loads).

A rule lasts ``count`` injections and/or ``seconds`` (``close``: once by default; otherwise until
deleted). Rules are checked in the order they were added; the first that matches applies. Every
injection is logged (``fault injected``) and counted (``faults-injected-total{kind,api}``).

Everything here runs on the event loop: the dispatcher matches there, and the control endpoint
runs its changes there.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from protocol import ApiKey, ErrorCode, api_name

from .responses import error_body

log = get_logger("coordinator.control.faults")

ERROR, DELAY, CLOSE, FREEZE, UNAVAILABLE = "error", "delay", "close", "freeze", "unavailable"
KINDS = (ERROR, DELAY, CLOSE, FREEZE, UNAVAILABLE)
PATCH = "patch"
"""Not a rule kind: what an ``unavailable`` rule does to FindCoordinator (its answer is
rewritten)."""

HEARTBEAT_APIS = frozenset({ApiKey.HEARTBEAT, ApiKey.CONSUMER_GROUP_HEARTBEAT,
                            ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_HEARTBEAT})
UNAVAILABLE_ERRORS = (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress)
FREEZE_POLL_S = 0.05
"""How often a held heartbeat checks whether its member's session expired."""
FREEZE_SETTLE_MAX_S = 30.0
"""How long a freeze waits, once the member is gone, for the group to settle without it."""

_FIELDS = frozenset({"kind", "api", "error", "group", "member", "client_id", "count", "seconds",
                     "delay_ms"})
_API_NAMES = {api_name(key).lower(): ApiKey(key) for key in ApiKey}
_API_NAMES.update({key.name.lower(): key for key in ApiKey})


class FaultSpecError(ValueError):
    """A rule the control endpoint refuses (HTTP 400): the message says why."""


# --- names ---------------------------------------------------------------------------------------
def parse_api(value: object) -> ApiKey:
    """Kafka's API name (``OffsetCommit``, also ``OFFSET_COMMIT``) or key (8)."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return ApiKey(value)
        except ValueError:
            raise FaultSpecError(f"unknown API key {value}") from None
    if isinstance(value, str):
        found = _API_NAMES.get(value.strip().lower())
        if found is not None:
            return found
    raise FaultSpecError(f"unknown API {value!r}; expected a Kafka API name such as "
                         f"OffsetCommit, Heartbeat, ConsumerGroupHeartbeat")


def parse_error(value: object) -> ErrorCode:
    """Kafka's error name (``REBALANCE_IN_PROGRESS``) or code (27)."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return ErrorCode(value)
        except ValueError:
            raise FaultSpecError(f"unknown error code {value}") from None
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return parse_error(int(text))
        try:
            return ErrorCode[text.lower()]
        except KeyError:
            pass
    raise FaultSpecError(f"unknown error {value!r}; expected a Kafka error name such as "
                         f"REBALANCE_IN_PROGRESS or NOT_COORDINATOR, or its code")


def error_name(code: ErrorCode) -> str:
    return code.name.upper()


# --- what a request names ------------------------------------------------------------------------
def group_ids(api_key: int, body: Any) -> frozenset[str]:
    """The group ids a request's body names."""
    found: set[str] = set()
    if api_key == ApiKey.FIND_COORDINATOR:
        if getattr(body, "key_type", 0) == 0:
            key = getattr(body, "key", None)
            if key:
                found.add(key)
            found.update(getattr(body, "coordinator_keys", None) or ())
        return frozenset(found)
    group = getattr(body, "group_id", None)
    if isinstance(group, str):
        found.add(group)
    for name in ("groups", "group_ids", "groups_names"):
        for item in getattr(body, name, None) or ():
            if isinstance(item, str):
                found.add(item)
            else:
                inner = getattr(item, "group_id", None)
                if isinstance(inner, str):
                    found.add(inner)
    return frozenset(found)


def member_ids(body: Any) -> frozenset[str]:
    """The member ids a request's body names (its own, or LeaveGroup's members')."""
    found: set[str] = set()
    member = getattr(body, "member_id", None)
    if isinstance(member, str) and member:
        found.add(member)
    for name in ("members", "groups"):
        for item in getattr(body, name, None) or ():
            inner = getattr(item, "member_id", None)
            if isinstance(inner, str) and inner:
                found.add(inner)
    return frozenset(found)


# --- rules ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class FaultRule:
    kind: str
    api: ApiKey | None = None
    error: ErrorCode | None = None
    group: str | None = None
    member: str | None = None
    client_id: str | None = None
    count: int | None = None
    """Injections left (None: no limit)."""
    seconds: float | None = None
    delay_ms: int = 0
    id: int = 0
    created: float = 0.0
    expires_at: float | None = None
    injected: int = 0
    gone_at: float | None = None
    """When a frozen member was first seen gone from its group."""
    ended: asyncio.Event | None = field(default=None, repr=False)
    """Set when the rule is gone (held heartbeats of a freeze go on)."""

    @classmethod
    def parse(cls, spec: object) -> FaultRule:
        """A rule from ``POST /faults``' JSON object; ``FaultSpecError`` says what is wrong."""
        if not isinstance(spec, Mapping):
            raise FaultSpecError("expected a JSON object such as {\"kind\": \"error\", "
                                 "\"api\": \"OffsetCommit\", \"error\": "
                                 "\"REBALANCE_IN_PROGRESS\", \"count\": 1}")
        unknown = sorted(set(spec) - _FIELDS)
        if unknown:
            raise FaultSpecError(f"unknown field(s) {', '.join(unknown)}; the fields are "
                                 f"{', '.join(sorted(_FIELDS))}")
        kind = spec.get("kind")
        if kind not in KINDS:
            raise FaultSpecError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        rule = cls(str(kind))
        if spec.get("api") is not None:
            rule.api = parse_api(spec["api"])
            if rule.api == ApiKey.API_VERSIONS:
                raise FaultSpecError("ApiVersions is not subject to faults")
        for name in ("group", "member", "client_id"):
            value = spec.get(name)
            if value is not None and not isinstance(value, str):
                raise FaultSpecError(f"{name} must be a string, not {value!r}")
            setattr(rule, name, value)
        rule.count = _positive_int(spec, "count")
        seconds = spec.get("seconds")
        if seconds is not None:
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
                    or not math.isfinite(seconds) or seconds <= 0:
                raise FaultSpecError(f"seconds must be a positive number, not {seconds!r}")
            rule.seconds = float(seconds)
        if spec.get("error") is not None:
            rule.error = parse_error(spec["error"])
        if spec.get("delay_ms") is not None and kind != DELAY:
            raise FaultSpecError("delay_ms is for kind delay")
        rule._check_kind(spec)
        return rule

    def _check_kind(self, spec: Mapping[str, Any]) -> None:
        kind = self.kind
        if kind == ERROR:
            if self.error is None:
                raise FaultSpecError("kind error needs an error (a Kafka error name or code)")
            if self.error is ErrorCode.none:
                raise FaultSpecError("NONE is not an error")
        elif self.error is not None and kind != UNAVAILABLE:
            raise FaultSpecError(f"error is not for kind {kind}")
        if kind == DELAY:
            delay = spec.get("delay_ms")
            if isinstance(delay, bool) or not isinstance(delay, (int, float)) \
                    or not math.isfinite(delay) or delay < 0:
                raise FaultSpecError(f"kind delay needs delay_ms, a number of milliseconds "
                                     f">= 0 (got {delay!r})")
            self.delay_ms = int(delay)
        elif kind == CLOSE:
            if self.count is None and self.seconds is None:
                self.count = 1
        elif kind == FREEZE:
            if not self.group or not self.member:
                raise FaultSpecError("kind freeze needs the group and the member")
            if self.count is not None:
                raise FaultSpecError("a freeze lasts until the member's session expires: "
                                     "bound it with seconds, not count")
            if self.api is not None and self.api not in HEARTBEAT_APIS:
                raise FaultSpecError("a freeze swallows heartbeats: api must be one of "
                                     + ", ".join(sorted(api_name(k) for k in HEARTBEAT_APIS)))
        elif kind == UNAVAILABLE:
            if not self.group:
                raise FaultSpecError("kind unavailable needs the group")
            if self.error is None:
                self.error = ErrorCode.not_coordinator
            if self.error not in UNAVAILABLE_ERRORS:
                raise FaultSpecError("kind unavailable answers NOT_COORDINATOR or "
                                     "COORDINATOR_LOAD_IN_PROGRESS")

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        now = time.monotonic() if now is None else now
        out: dict[str, Any] = {"id": self.id, "kind": self.kind,
                               "api": None if self.api is None else api_name(self.api)}
        if self.error is not None:
            out["error"] = error_name(self.error)
            out["error_code"] = int(self.error)
        for name in ("group", "member", "client_id"):
            out[name] = getattr(self, name)
        if self.kind == DELAY:
            out["delay_ms"] = self.delay_ms
        out["remaining_count"] = self.count
        out["remaining_seconds"] = (None if self.expires_at is None
                                    else round(max(0.0, self.expires_at - now), 3))
        out["injected"] = self.injected
        return out

    def matches(self, api_key: int, client_id: str | None, groups: Callable[[], frozenset[str]],
                members: Callable[[], frozenset[str]]) -> bool:
        if self.api is not None:
            if api_key != self.api:
                return False
        elif api_key == ApiKey.API_VERSIONS:
            return False
        if self.kind == FREEZE and api_key not in HEARTBEAT_APIS:
            return False
        if self.client_id is not None and client_id != self.client_id:
            return False
        if self.group is not None and self.group not in groups():
            return False
        return self.member is None or self.member in members()


def _positive_int(spec: Mapping[str, Any], name: str) -> int | None:
    value = spec.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FaultSpecError(f"{name} must be a positive integer, not {value!r}")
    return value


# --- what the dispatcher does ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Injection:
    """A matched rule, for one request: ``kind`` says what the dispatcher does (``error`` and
    ``unavailable``: answer ``response(...)``; ``delay``: handle, then wait ``delay_s``;
    ``close``: close with ``reason``; ``freeze``: await ``held`` first; ``patch``: handle,
    then answer ``patch(response)``)."""

    kind: str
    rule: FaultRule
    reason: str = ""
    delay_s: float = 0.0
    held: Awaitable[None] | None = None

    def response(self, response_type: type, request: Any) -> Any:
        error = self.rule.error or ErrorCode.unknown_server_error
        return error_body(response_type, request, error,
                          f"Fault injected by the control endpoint (rule {self.rule.id}).")

    def patch(self, response: Any) -> Any:
        """FindCoordinator of an unavailable group: no coordinator for it."""
        group = self.rule.group
        error = ErrorCode.coordinator_not_available
        message = "The coordinator is not available (fault injected by the control endpoint)."
        coordinators = getattr(response, "coordinators", None)
        if coordinators is not None:
            return dataclasses.replace(response, coordinators=tuple(
                dataclasses.replace(c, node_id=-1, host="", port=-1, error_code=error,
                                    error_message=message) if c.key == group else c
                for c in coordinators))
        return dataclasses.replace(response, error_code=error, error_message=message,
                                   node_id=-1, host="", port=-1)


GroupQuestion = Callable[[str, str], "bool | None"]
"""A question about ``(group, member)`` answered from the group's state on the event loop
(None: unknown, e.g. the group's partition is loading): whether the member is gone and its
group settled without it (``rebalance.settled_without``), whether it is in the group
(``rebalance.member_present``)."""


class FaultInjector:
    """The active rules; ``match`` is called for each request while any is active."""

    def __init__(self, freeze_over: GroupQuestion | None = None,
                 member_present: GroupQuestion | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.freeze_over = freeze_over
        self.member_present = member_present
        self.clock = clock
        self._rules: dict[int, FaultRule] = {}
        self._ids = itertools.count(1)

    @property
    def armed(self) -> bool:
        return bool(self._rules)

    # --- the control endpoint's changes ---------------------------------------------------------
    def add(self, rule: FaultRule) -> FaultRule:
        rule.id = next(self._ids)
        rule.created = self.clock()
        rule.expires_at = None if rule.seconds is None else rule.created + rule.seconds
        rule.injected = 0
        rule.ended = asyncio.Event()
        self._rules[rule.id] = rule
        log.info("fault rule added", **_fields(rule))
        return rule

    def remove(self, rule_id: int, reason: str = "deleted") -> FaultRule | None:
        rule = self._rules.pop(rule_id, None)
        if rule is not None:
            if rule.ended is not None:
                rule.ended.set()
            log.info("fault rule ended", rule=rule.id, kind=rule.kind, reason=reason,
                     injected=rule.injected)
        return rule

    def clear(self) -> int:
        ids = list(self._rules)
        for rule_id in ids:
            self.remove(rule_id)
        return len(ids)

    def rules(self) -> list[FaultRule]:
        self._expire(self.clock())
        return list(self._rules.values())

    def gone(self, rule: FaultRule) -> bool:
        """Whether a frozen member left its group (asked of ``member_present``)."""
        present = self.member_present
        return present is not None and present(rule.group or "", rule.member or "") is False

    def _expire(self, now: float) -> None:
        for rule in list(self._rules.values()):
            if rule.expires_at is not None and now >= rule.expires_at:
                self.remove(rule.id, "seconds elapsed")

    # --- the dispatcher's question --------------------------------------------------------------
    def match(self, api_key: int, client_id: str | None, body: Any,
              connection_id: str = "") -> Injection | None:
        """What to do with this request, if a rule matches it (the rule's count is taken)."""
        self._expire(self.clock())
        cache: dict[str, frozenset[str]] = {}

        def groups() -> frozenset[str]:
            if "g" not in cache:
                cache["g"] = group_ids(api_key, body)
            return cache["g"]

        def members() -> frozenset[str]:
            if "m" not in cache:
                cache["m"] = member_ids(body)
            return cache["m"]

        for rule in list(self._rules.values()):
            if not rule.matches(api_key, client_id, groups, members):
                continue
            kind = rule.kind
            if kind == UNAVAILABLE and api_key == ApiKey.FIND_COORDINATOR:
                if rule.error is not ErrorCode.not_coordinator:
                    continue  # loading: this node is still the coordinator
                self._injected(rule, PATCH, api_key, client_id, groups(), members(),
                               connection_id, counted=False)
                return Injection(PATCH, rule)
            self._injected(rule, kind, api_key, client_id, groups(), members(), connection_id)
            if kind == DELAY:
                return Injection(DELAY, rule, delay_s=rule.delay_ms / 1000.0)
            if kind == CLOSE:
                return Injection(CLOSE, rule, reason=f"fault injected: close (rule {rule.id})")
            if kind == FREEZE:
                return Injection(FREEZE, rule, held=self._hold(rule))
            return Injection(kind, rule)
        return None

    def _injected(self, rule: FaultRule, kind: str, api_key: int, client_id: str | None,
                  groups: frozenset[str], members: frozenset[str], connection_id: str,
                  counted: bool = True) -> None:
        rule.injected += 1
        api = api_name(api_key)
        log.info("fault injected", rule=rule.id, kind=rule.kind, api=api,
                 group=rule.group or _one(groups), member=rule.member or _one(members),
                 client_id=client_id, connection=connection_id,
                 error=None if rule.error is None else error_name(rule.error))
        sensors.record_fault_injected(rule.kind if kind != PATCH else UNAVAILABLE, api)
        if counted and rule.count is not None:
            rule.count -= 1
            if rule.count <= 0:
                self.remove(rule.id, "count reached")

    async def _hold(self, rule: FaultRule) -> None:
        """Until the frozen member is gone and its group settled (or the rule is gone)."""
        assert rule.ended is not None and rule.group and rule.member
        while not rule.ended.is_set():
            now = self.clock()
            if rule.expires_at is not None and now >= rule.expires_at:
                self.remove(rule.id, "seconds elapsed")
                break
            if self.freeze_over is not None:
                over = self.freeze_over(rule.group, rule.member)
                if over:
                    self.remove(rule.id, "the member's session expired and the group settled "
                                "without it")
                    break
                if over is False and rule.gone_at is None and self.gone(rule):
                    rule.gone_at = now
                if rule.gone_at is not None and now - rule.gone_at >= FREEZE_SETTLE_MAX_S:
                    self.remove(rule.id, "the member's session expired")
                    break
            try:
                async with asyncio.timeout(FREEZE_POLL_S):
                    await rule.ended.wait()
            except TimeoutError:
                pass


def _fields(rule: FaultRule) -> dict[str, Any]:
    """The rule as log fields (its id as ``rule``, as in ``fault injected``)."""
    fields = {key: value for key, value in rule.to_json().items()
              if value is not None and key not in ("injected", "error_code")}
    fields["rule"] = fields.pop("id")
    return fields


def _one(values: frozenset[str]) -> str | None:
    return next(iter(sorted(values)), None)
