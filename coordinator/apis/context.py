"""What a handler gets: the request header, the schema of its version, and the broker."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from coordinator.metadata.broker import Broker, Endpoint
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
    bitfield,
)
from protocol import RequestHeader, Schema, api_name, make

_audit = get_logger("coordinator.authorizer")
T = TypeVar("T")


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    schema: Schema
    broker: Broker
    connection_id: str
    principal: str = "User:ANONYMOUS"
    """Who sent the request (Kafka's ``KafkaPrincipal`` as ``type:name``): the authenticated
    SASL user, or ``User:ANONYMOUS`` on a listener without authentication."""
    listener: str = ""
    """The listener the request came in on (``listeners``' name, e.g. ``SASL_SSL``)."""
    legacy: Mapping[str, Any] | None = None
    """What a request of a version Kafka 4.0 removed carries that the version it is served as
    cannot (``protocol/legacy.py``: OffsetCommit v1's ``commit_timestamps``); None otherwise."""
    node_id: int | None = None
    """The broker of ``cluster.brokers`` > 1 the request reached (None: the only broker)."""

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def node(self) -> int:
        """The node id of the broker the request reached."""
        return self.broker.node_id if self.node_id is None else self.node_id

    @property
    def endpoint(self) -> Endpoint:
        """This node's host and port as advertised on the request's listener (Kafka answers
        Metadata and FindCoordinator with the endpoints of the listener the client used)."""
        if self.node_id is not None:
            return self.broker.endpoint_of(self.node_id, self.listener)
        return self.broker.endpoint_for(self.listener)

    def endpoint_of(self, node_id: int) -> Endpoint:
        """What broker ``node_id`` advertises on the request's listener."""
        return self.broker.endpoint_of(node_id, self.listener)

    @property
    def client_address(self) -> str:
        """The client's IP address as ACL hosts name it (``127.0.0.1``); connections are
        named ``host:port-n``."""
        return self.connection_id.rsplit("-", 1)[0].rsplit(":", 1)[0]

    def authorize(self, operation: AclOperation, resource_type: ResourceType,
                  name: str = CLUSTER_NAME, log_denied: bool = True) -> bool:
        """May this request's principal do ``operation`` on the resource? Always, with no
        authorizer (Kafka's ``AuthHelper.authorize``). A denial is logged unless the check only
        filters what a response shows."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return True
        if authorizer.authorize(self.principal, self.client_address, operation, resource_type,
                                name):
            return True
        if log_denied:
            _audit.info("authorization denied", principal=self.principal,
                        host=self.client_address, operation=operation.name,
                        resource_type=resource_type.name, resource=name,
                        api=api_name(self.header.api_key), connection=self.connection_id)
        return False

    def authorized(self, operation: AclOperation, resource_type: ResourceType,
                   names: Iterable[str | None], log_denied: bool = True) -> set[str]:
        """The names among ``names`` this principal may do ``operation`` on (Kafka's
        ``filterByAuthorized``; each distinct name is decided once)."""
        if self.broker.authorizer is None:
            return {name for name in names if name is not None}
        return {name for name in set(names) if name is not None
                and self.authorize(operation, resource_type, name, log_denied)}

    def authorize_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """May this principal do ``operation`` on some resource of this type? (Kafka's
        ``authorizeByResourceType``; always, with no authorizer.)"""
        authorizer = self.broker.authorizer
        return authorizer is None or authorizer.authorize_by_resource_type(
            self.principal, self.client_address, operation, resource_type)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The bitfield of the resource type's operations this principal may do, as the
        ``AuthorizedOperations`` fields carry it (all of them with no authorizer)."""
        return bitfield(op for op in SUPPORTED_OPERATIONS[resource_type]
                        if self.authorize(op, resource_type, name, log_denied=False))

    def respond(self, **fields: Any) -> Any:
        """The response of this request's version, from every field the handler knows."""
        return make(self.schema.response_type, **fields)

    def nested(self, struct: str | tuple[str, ...], /, **fields: Any) -> Any:
        """A nested response struct (e.g. ``MetadataResponseTopic``) of this version. Kafka
        renamed some structs between versions: give every name and the one present is used."""
        module = sys.modules[self.schema.response_type.__module__]
        for name in (struct,) if isinstance(struct, str) else struct:
            cls = getattr(module, name, None)
            if cls is not None:
                return make(cls, **fields)
        raise AttributeError(f"{module.__name__} has none of {struct}")


def answer_later(source: asyncio.Future[T], on_result: Callable[[T], Any],
                 on_error: Callable[[CoordinatorError], Any]) -> asyncio.Future[Any]:
    """A handler's answer as a future: ``on_result`` of what the runtime event ``source``
    answers, or ``on_error`` of the CoordinatorError it fails with (any other failure is the
    answer's, for the dispatcher to report)."""
    answer: asyncio.Future[Any] = source.get_loop().create_future()

    def done(_: asyncio.Future[T]) -> None:
        if answer.done():
            return
        if source.cancelled():
            answer.cancel()
            return
        try:
            exc = source.exception()
            if exc is None:
                answer.set_result(on_result(source.result()))
            elif isinstance(exc, CoordinatorError):
                answer.set_result(on_error(exc))
            else:
                answer.set_exception(exc)
        except Exception as failure:  # a bug in the callbacks: the dispatcher reports it
            answer.set_exception(failure)

    source.add_done_callback(done)
    return answer


@dataclass(frozen=True, slots=True)
class Repeatable:
    """A handler's answer given at once (``body``) with how to answer the same request again:
    ``again(now_ms)`` is the body to answer it with at ``now_ms`` (the runtime clock's), or
    None when only handling it anew can tell (it then changed nothing). The dispatcher
    answers ``body`` and keeps ``again`` as the connection's ``dispatch.Shortcut`` for that
    request's bytes; the connection times the answers it gives so (``Dispatcher.ran_now``)."""

    body: Any
    again: Callable[[int], Any]
