"""From a request frame to a response frame: version checks, decoding, the handler, encoding.

``Dispatcher.dispatch`` returns the encoded response at once for synchronous handlers, or an
awaitable of it for asynchronous ones; it raises ``CloseConnection`` when Kafka would close the
connection (unknown API key, malformed frame, a version it does not serve). A version Kafka 4.0
removed (KIP-896) is served through ``protocol/legacy.py`` unless
``legacy.request.versions.enable`` is off. While the
control endpoint has a fault rule active, a matching request is answered as the rule says
(``coordinator/control/faults.py``): an error instead of the handler's answer, a late answer,
a held heartbeat, or a closed connection.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from coordinator.apis.api_versions import unsupported_version_frame
from coordinator.cluster import routing
from coordinator.control.faults import (
    CLOSE,
    DELAY,
    FREEZE,
    PATCH,
    FaultInjector,
    Injection,
    group_ids,
)
from coordinator.control.responses import error_body
from coordinator.metadata.broker import Broker
from coordinator.observability.logs import get_logger
from protocol import (
    ErrorCode,
    ProtocolError,
    Schema,
    api_name,
    encode_response,
    error_response,
    has_field,
    peek_fixed,
    schema,
)
from protocol.encoded import EncodedBody, frame_encoded
from protocol.header import encode_response_header
from protocol.legacy import LegacyApi, downgrade_response, upgrade_request
from protocol.repeated import decode_repeated

from .apis import ApiRegistry, ApiSpec, RequestContext
from .apis.context import Repeatable

log = get_logger("coordinator.dispatch")


def _debug() -> bool:
    """Whether debug lines are logged (structlog's filtering logger knows its level)."""
    enabled = getattr(log, "is_enabled_for", None)
    return True if enabled is None else bool(enabled(logging.DEBUG))


NO_RESPONSE = b""
"""What ``dispatch`` returns when nothing is to be written back (a handler returned None)."""


class CloseConnection(Exception):
    """The connection must be closed; the message says why (it is logged)."""


_SIZE = struct.Struct(">i")


class Shortcut:
    """How to answer again a request that comes back with the same bytes but for its
    correlation id (a steady member's heartbeat), without decoding or dispatching it: the
    handler's ``Repeatable.again``, while no fault rule is armed (the connection asks
    ``Dispatcher.faults_armed`` once per batch of such answers). ``again(now_ms)`` is the
    body to answer with, or None when the shortcut cannot answer (then the request is
    dispatched as any other, and nothing was done). The answer frame of the last body
    ``take`` was given (``body``) is ``head`` (its size prefix), the correlation id, then
    ``tail``. ``api`` is the request's API key and version (its bytes 4-8 after the size
    prefix, as one big-endian int)."""

    __slots__ = ("_header_tail", "again", "api", "body", "head", "tail")

    def __init__(self, found: Schema, again: Callable[[int], EncodedBody | None],
                 api: int = 0) -> None:
        self.api = api
        self.again = again
        self._header_tail = encode_response_header(0, found.response_header_version)[4:]
        self.body: EncodedBody | None = None
        self.head = b""
        self.tail = b""

    def take(self, body: EncodedBody) -> None:
        """Answer with ``body`` (what ``again`` gave, not the last one) from now on."""
        self.body = body
        self.tail = self._header_tail + body
        self.head = _SIZE.pack(4 + len(self.tail))


class Dispatcher:
    def __init__(self, broker: Broker, registry: ApiRegistry,
                 faults: FaultInjector | None = None) -> None:
        self.broker = broker
        self.registry = registry
        self.legacy: dict[int, LegacyApi] = registry.legacy
        """The removed versions served (``legacy.request.versions.enable``), by API key:
        empty behaves as Kafka 4.x, which closes the connection of such a request."""
        self.faults = faults
        """The control endpoint's fault rules (``coordinator/control/faults.py``), asked about
        every request while one is active; None when the endpoint is off."""
        self.debug = _debug()
        """Whether each request is logged at debug level (read once: logging is set up first)."""
        runtime = broker.runtime
        self.now_ms: Callable[[], int] = runtime.clock.now_ms
        """The runtime clock's time, for ``Shortcut.answer``."""
        self.ran_now: Callable[[int, float], None] = runtime.ran_now
        """``ran_now(count, ms)``: told of the answers a connection gave from shortcuts, in
        one batch (``CoordinatorRuntime.ran_now``)."""
        self.shortcut: Shortcut | None = None
        """Set by ``dispatch`` when the request it answered at once may be answered again by a
        ``Shortcut`` (its handler returned a ``Repeatable``): for the caller to read right
        after ``dispatch`` returns. Never set while requests are logged at debug level."""

    def faults_armed(self) -> bool:
        """Whether a fault rule is armed: then no shortcut answers (every request is
        dispatched, for the rules to see it)."""
        return self.faults is not None and self.faults.armed

    def dispatch(self, frame: bytes, connection_id: str, principal: str = "User:ANONYMOUS",
                 listener: str = "") -> bytes | Awaitable[bytes]:
        """``principal``: who the connection authenticated as; ``listener``: the listener it
        came in on (what Metadata and FindCoordinator advertise)."""
        self.shortcut = None
        try:
            return self._dispatch(frame, connection_id, principal, listener)
        except CloseConnection:
            raise
        except Exception as exc:  # a bug of ours: log it, and drop only this connection
            log.exception("request failed", connection=connection_id)
            raise CloseConnection(f"internal error: {exc}") from exc

    def _dispatch(self, frame: bytes, connection_id: str, principal: str,
                  listener: str) -> bytes | Awaitable[bytes]:
        try:
            api_key, api_version, correlation_id = peek_fixed(frame)
        except ProtocolError as exc:
            raise CloseConnection(str(exc)) from None
        spec = self.registry.get(api_key)
        if spec is None:
            raise CloseConnection(f"unknown api key {api_key}")
        if not spec.supports(api_version):
            legacy = self.legacy.get(api_key)
            if legacy is not None and legacy.serves(api_version):
                return self._legacy(legacy, spec, frame, connection_id, principal, listener)
            return self._unsupported_version(api_key, api_version, correlation_id, frame)
        try:
            request = decode_repeated(frame)  # decode_request, steady heartbeats kept
        except ProtocolError as exc:
            raise CloseConnection(
                f"malformed {api_name(api_key)} v{api_version} request: {exc}"
            ) from None
        ctx = RequestContext(request.header, request.schema, self.broker, connection_id,
                             principal, listener)
        if self.debug:  # the fields cost something even when the line is filtered out
            log.debug("request", connection=connection_id, client_id=request.header.client_id,
                      api=api_name(api_key), version=api_version,
                      correlation_id=request.header.correlation_id)
        faults = self.faults
        if faults is not None and faults.armed:
            injection = faults.match(api_key, request.header.client_id, request.body,
                                     connection_id)
            if injection is not None:
                return self._inject(injection, spec, ctx, request.body)
        return self._handle(spec, ctx, request.body, shortcut=not self.debug)

    def _legacy(self, legacy: LegacyApi, spec: ApiSpec, frame: bytes, connection_id: str,
                principal: str, listener: str) -> bytes | Awaitable[bytes]:
        """A version Kafka 4.0 removed: served as the codec's oldest version of the API, its
        answer converted back (``protocol/legacy.py``)."""
        version = peek_fixed(frame)[1]
        try:
            upgraded = upgrade_request(legacy, frame)
        except ProtocolError as exc:
            raise CloseConnection(
                f"malformed {api_name(legacy.api_key)} v{version} request: {exc}") from None
        header = upgraded.header
        ctx = RequestContext(header, schema(header.api_key, header.api_version), self.broker,
                             connection_id, principal, listener, upgraded.extras or None)
        if self.debug:
            log.debug("request", connection=connection_id, client_id=header.client_id,
                      api=api_name(header.api_key), version=version,
                      correlation_id=header.correlation_id)
        answer = self._handle(spec, ctx, upgraded.body)
        if isinstance(answer, bytes):
            return downgrade_response(legacy, version, upgraded.request, answer)
        return _downgraded(legacy, version, upgraded.request, answer)

    def _handle(self, spec: ApiSpec, ctx: RequestContext, body: Any, shortcut: bool = False
                ) -> bytes | Awaitable[bytes]:
        try:
            result = spec.handler(ctx, body)
            if type(result) is Repeatable:
                if shortcut:
                    header = ctx.header
                    self.shortcut = Shortcut(ctx.schema, result.again,
                                             (header.api_key << 16) | header.api_version)
                result = result.body
            if isinstance(result, asyncio.Future):
                return self._answer_when_done(ctx, result)
            if inspect.isawaitable(result):
                return self._finish(ctx, result)
            return self._encode(ctx, result)
        except Exception:
            return self._failed(ctx)

    def _answer_when_done(self, ctx: RequestContext, pending: asyncio.Future[Any]
                          ) -> asyncio.Future[bytes]:
        """A handler that answers with a future (no coroutine, no task of its own: the cheap
        path of the hottest writes): its answer encoded once the future is done."""
        answer: asyncio.Future[bytes] = pending.get_loop().create_future()

        def done(_: asyncio.Future[Any]) -> None:
            if answer.done():
                return
            if pending.cancelled():
                answer.cancel()
                return
            try:
                answer.set_result(self._encode(ctx, pending.result()))
            except CloseConnection as exc:
                answer.set_exception(exc)
            except Exception:
                try:
                    answer.set_result(self._failed(ctx))
                except CloseConnection as exc:
                    answer.set_exception(exc)

        pending.add_done_callback(done)
        return answer

    async def _finish(self, ctx: RequestContext, pending: Awaitable[Any]) -> bytes:
        try:
            body = await pending
            return self._encode(ctx, body)
        except Exception:
            return self._failed(ctx)

    # --- fault injection (the control endpoint) ------------------------------------------------
    def _inject(self, injection: Injection, spec: ApiSpec, ctx: RequestContext,
                body: Any) -> bytes | Awaitable[bytes]:
        kind = injection.kind
        if kind == CLOSE:
            return _close(injection.reason)
        if kind == DELAY:
            return _delayed(self._handle(spec, ctx, body), injection.delay_s)
        if kind == FREEZE:
            assert injection.held is not None
            return self._after(injection.held, spec, ctx, body)
        if kind == PATCH:  # FindCoordinator of an unavailable group
            try:
                result = spec.handler(ctx, body)
                if not inspect.isawaitable(result):
                    return self._encode(ctx, injection.patch(result))
                return self._finish(ctx, result)
            except Exception:
                return self._failed(ctx)
        if getattr(body, "acks", None) == 0 and ctx.header.api_key == 0:
            return NO_RESPONSE  # Produce with acks=0 gets no answer, failed or not
        return self._encode(ctx, injection.response(ctx.schema.response_type, body))

    async def _after(self, held: Awaitable[None], spec: ApiSpec, ctx: RequestContext,
                     body: Any) -> bytes:
        """A frozen member's heartbeat: handled once the freeze is over."""
        await held
        answer = self._handle(spec, ctx, body)
        return answer if isinstance(answer, bytes) else await answer

    def _encode(self, ctx: RequestContext, body: Any) -> bytes:
        if body is None:  # the handler sends no response (Produce with acks=0)
            return NO_RESPONSE
        if type(body) is EncodedBody:  # a body the handler keeps encoded
            return frame_encoded(ctx.schema, ctx.header.correlation_id, body)
        return encode_response(ctx.schema, ctx.header.correlation_id, body)

    def _failed(self, ctx: RequestContext) -> bytes:
        log.exception("handler failed", api=api_name(ctx.header.api_key), version=ctx.version,
                      connection=ctx.connection_id, client_id=ctx.header.client_id)
        if not has_field(ctx.schema.response_type, "error_code"):
            # No top-level error code to carry the failure: an empty body would read as
            # success, so the connection is closed instead.
            raise CloseConnection("internal error with no error field to report it in")
        body: Any = error_response(ctx.schema.response_type, ErrorCode.unknown_server_error)
        return self._encode(ctx, body)

    def _unsupported_version(self, api_key: int, api_version: int, correlation_id: int,
                             frame: bytes) -> bytes:
        """ApiVersions: the v0-format answer with the ranges; any other API: the connection is
        closed, as Kafka's SocketServer closes it for a version it has not enabled."""
        if api_key == 18:
            return unsupported_version_frame(self.registry, correlation_id)
        raise CloseConnection(f"unsupported {api_name(api_key)} version {api_version}")


class BrokerDispatcher(Dispatcher):
    """The dispatcher of one broker of ``cluster.brokers`` > 1: its requests carry its node id
    (``RequestContext.node_id``), a group's or transactional id's request it does not
    coordinate is answered NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it loads the
    partition: ``coordinator/cluster/routing.py``), and its answers are delayed while the
    control endpoint delays the broker. With one broker the plain ``Dispatcher`` runs: none
    of this costs anything there."""

    def __init__(self, broker: Broker, registry: ApiRegistry, faults: FaultInjector | None,
                 node_id: int) -> None:
        super().__init__(broker, registry, faults)
        assert broker.cluster is not None
        self.cluster = broker.cluster
        self.node_id = node_id
        self.node = broker.cluster.broker(node_id)

    def _handle(self, spec: ApiSpec, ctx: RequestContext, body: Any, shortcut: bool = False
                ) -> bytes | Awaitable[bytes]:
        # no shortcuts (``Shortcut``) here: an answer again from the bytes would skip the
        # coordinator and leader checks below and the broker's delay
        ctx.node_id = self.node_id
        refused = self._refused(ctx, body)
        answer = self._encode(ctx, refused) if refused is not None \
            else super()._handle(spec, ctx, body)
        delay = self.node.delay(time.monotonic())
        return _delayed(answer, delay) if delay > 0 else answer

    def _inject(self, injection: Injection, spec: ApiSpec, ctx: RequestContext,
                body: Any) -> bytes | Awaitable[bytes]:
        ctx.node_id = self.node_id
        return super()._inject(injection, spec, ctx, body)

    def _refused(self, ctx: RequestContext, body: Any) -> Any:
        api_key = ctx.header.api_key
        if api_key in routing.GROUP_APIS:
            keys: Any = group_ids(api_key, body)
        elif api_key in routing.TRANSACTION_APIS:
            keys = routing.transactional_ids(body)
        else:
            return None
        if not keys:
            return None
        runtime = self.broker.runtime
        error = routing.coordinator_error(self.cluster, self.node_id,
                                          {runtime.partition_for(key) for key in keys},
                                          time.monotonic(), api_key)
        if error is None:
            return None
        return error_body(ctx.schema.response_type, body, error)


async def _downgraded(legacy: LegacyApi, version: int, request: Any,
                      answer: Awaitable[bytes]) -> bytes:
    return downgrade_response(legacy, version, request, await answer)


async def _close(reason: str) -> bytes:
    """Raised from the writer's side, so the answers owed before it go out first."""
    raise CloseConnection(reason)


async def _delayed(answer: bytes | Awaitable[bytes], seconds: float) -> bytes:
    data = answer if isinstance(answer, bytes) else await answer
    await asyncio.sleep(seconds)
    return data
