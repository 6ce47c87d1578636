"""TLS for SSL and SASL_SSL listeners: an ``ssl.SSLContext`` from Kafka's ``ssl.*`` configs
(PEM key stores and trust stores only), and the principal of a client certificate.

``ssl.keystore.location`` is a PEM file with the private key and the certificate chain;
``ssl.keystore.certificate.chain`` / ``ssl.keystore.key`` give the same as config values.
``ssl.key.password`` decrypts an encrypted key. ``ssl.truststore.location`` /
``ssl.truststore.certificates`` are the CAs client certificates are checked against
(``ssl.client.auth`` requested or required).
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from coordinator.config import ConfigError, ServerConfig

_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


@contextmanager
def _pem_file(text: str) -> Iterator[str]:
    """``text`` in a file only this process can read, for as long as ``ssl`` needs a path."""
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(text if text.endswith("\n") else text + "\n")
        yield path
    finally:
        os.unlink(path)


def _require_pem(config: ServerConfig, listener: str, key: str) -> None:
    kind = config.for_listener(listener, key)
    if str(kind).upper() != "PEM":
        raise ConfigError(key, kind, f"Only PEM stores are supported: set {key}=PEM")


def server_context(config: ServerConfig, listener: str) -> ssl.SSLContext:
    """The TLS context of one listener; a ``ConfigError`` for a missing or bad store."""

    def value(key: str) -> Any:
        return config.for_listener(listener, key)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_VERSIONS[name] for name in value("ssl.enabled.protocols"))
    if not versions:
        raise ConfigError("ssl.enabled.protocols", "", "No SSL protocols are enabled")
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    password = value("ssl.key.password")
    location, chain, key = (value("ssl.keystore.location"),
                            value("ssl.keystore.certificate.chain"), value("ssl.keystore.key"))
    try:
        if location:
            _require_pem(config, listener, "ssl.keystore.type")
            context.load_cert_chain(location, password=password)
        elif chain and key:
            _require_pem(config, listener, "ssl.keystore.type")
            with _pem_file(key + "\n" + chain) as path:
                context.load_cert_chain(path, password=password)
        else:
            raise ConfigError("ssl.keystore.location", None,
                              f"Listener {listener} uses TLS and needs a key store: "
                              "ssl.keystore.location, or ssl.keystore.certificate.chain and "
                              "ssl.keystore.key (with ssl.keystore.type=PEM)")
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError("ssl.keystore.location", location or "(ssl.keystore.key)",
                          f"Cannot load the key store of listener {listener}: {exc}") from None
    client_auth = value("ssl.client.auth")
    context.verify_mode = _CLIENT_AUTH[client_auth]
    trust_location, trust_certificates = (value("ssl.truststore.location"),
                                          value("ssl.truststore.certificates"))
    try:
        if trust_location:
            _require_pem(config, listener, "ssl.truststore.type")
            context.load_verify_locations(cafile=trust_location)
        elif trust_certificates:
            _require_pem(config, listener, "ssl.truststore.type")
            context.load_verify_locations(cadata=trust_certificates)
        elif client_auth != "none":
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError("ssl.truststore.location", trust_location or "(certificates)",
                          f"Cannot load the trust store of listener {listener}: {exc}") from None
    return context


# RFC 2253 keywords Java's X500Principal.getName() uses, by the names Python's ssl gives.
_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L",
             "stateOrProvinceName": "ST", "organizationName": "O",
             "organizationalUnitName": "OU", "streetAddress": "STREET",
             "domainComponent": "DC", "userId": "UID"}


def _escape(value: str) -> str:
    out = "".join("\\" + char if char in ',+"\\<>;=' else char for char in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def certificate_principal(certificate: dict[str, Any] | None) -> str | None:
    """Kafka's default SSL principal of a verified client certificate: ``User:`` and the
    subject's distinguished name in RFC 2253 form (``User:CN=alice,O=example``); None
    without one."""
    subject = (certificate or {}).get("subject")
    if not subject:
        return None
    rdns = ["+".join(f"{_KEYWORDS.get(name, name)}={_escape(value)}" for name, value in rdn)
            for rdn in subject]
    return "User:" + ",".join(reversed(rdns))
