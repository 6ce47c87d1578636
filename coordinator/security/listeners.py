"""What each listener's security protocol asks of its connections: TLS (SSL, SASL_SSL) and
SASL (SASL_PLAINTEXT, SASL_SSL) with the listener's enabled mechanisms, PLAIN users and the
SCRAM credentials. Built once at start; a bad setting is a ``ConfigError``."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from coordinator.config import ConfigError, ServerConfig
from coordinator.config.listeners import Listener
from coordinator.observability.logs import get_logger

from .credentials import ScramCredentials
from .jaas import JaasError, parse_jaas_config, plain_users
from .mechanism import SaslServer
from .plain import PlainServer
from .sasl import SaslAuthenticator
from .scram import ScramServer
from .tls import server_context

log = get_logger("coordinator.security")


@dataclass(slots=True)
class ListenerSecurity:
    listener: Listener
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanisms: list[str] = field(default_factory=list)
    """Enabled in this order (SaslHandshake lists them so); empty: no SASL on this listener."""
    plain_users: dict[str, str] = field(default_factory=dict)
    credentials: ScramCredentials = field(default_factory=ScramCredentials)

    @property
    def uses_sasl(self) -> bool:
        return self.listener.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def uses_tls(self) -> bool:
        return self.listener.security_protocol in ("SSL", "SASL_SSL")

    def _server(self, mechanism: str) -> SaslServer:
        if mechanism == "PLAIN":
            return PlainServer(self.plain_users)
        return ScramServer(mechanism, self.credentials)

    def authenticator(self, api_versions: Callable[[bytes], bytes]) -> SaslAuthenticator:
        factories: dict[str, Callable[[], SaslServer]] = {
            mechanism: partial(self._server, mechanism) for mechanism in self.sasl_mechanisms}
        return SaslAuthenticator(self.sasl_mechanisms, factories, api_versions)


def listener_security(config: ServerConfig, listener: Listener,
                      credentials: ScramCredentials) -> ListenerSecurity:
    security = ListenerSecurity(listener, credentials=credentials)
    if security.uses_tls:
        security.ssl_context = server_context(config, listener.name)
    if not security.uses_sasl:
        return security
    security.sasl_mechanisms = list(config.for_listener(listener.name,
                                                        "sasl.enabled.mechanisms"))
    if not security.sasl_mechanisms:
        raise ConfigError("sasl.enabled.mechanisms", "",
                          f"No SASL mechanisms are enabled on listener {listener.name}")
    if "PLAIN" in security.sasl_mechanisms:
        jaas = config.jaas_config(listener.name, "PLAIN")
        if jaas:
            try:
                security.plain_users = plain_users(parse_jaas_config(jaas))
            except JaasError as exc:
                raise ConfigError(f"{listener.config_prefix}plain.sasl.jaas.config", "[hidden]",
                                  str(exc)) from None
        if not security.plain_users:
            log.warning("SASL/PLAIN enabled with no users", listener=listener.name,
                        hint=f"set {listener.config_prefix}plain.sasl.jaas.config to "
                        'PlainLoginModule required user_<name>="<password>";')
    return security
