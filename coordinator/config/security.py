"""Listener security, TLS, SASL and connection-limit configs: Kafka's names, types and defaults.

Most keys here may also be given for one listener with Kafka's prefix,
``listener.name.<listener, lowercased>.<key>`` (``ServerConfig.for_listener`` reads it), and a
SASL mechanism's JAAS config as
``listener.name.<listener>.<mechanism, lowercased>.sasl.jaas.config``.
"""

from __future__ import annotations

from .model import INT_MAX, ConfigDef, ConfigType, Importance

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""Kafka's ``SecurityProtocol`` names, in its order."""

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""The SASL mechanisms this server implements (Kafka's default, GSSAPI, is not one of them)."""

INT, STRING, LIST, PASSWORD = ConfigType.INT, ConfigType.STRING, ConfigType.LIST, \
    ConfigType.PASSWORD

SECURITY_CONFIGS: tuple[ConfigDef, ...] = (
    # --- listeners and their security protocols --------------------------------------------
    ConfigDef("listener.security.protocol.map", STRING,
              ",".join(f"{name}:{name}" for name in SECURITY_PROTOCOLS),
              "Map between listener names and security protocols, e.g. "
              "INTERNAL:SSL,EXTERNAL:SASL_SSL. A listener whose name is a security protocol "
              "needs no entry.", importance=Importance.LOW),
    # --- connection limits ----------------------------------------------------------------
    ConfigDef("max.connections", INT, INT_MAX,
              "The maximum number of connections we allow in the broker at any time (also per "
              "listener as listener.name.<listener>.max.connections). New connections wait "
              "to be accepted while the limit is reached.", at_least=0),
    ConfigDef("max.connections.per.ip", INT, INT_MAX,
              "The maximum number of connections we allow from each ip address. New "
              "connections from the ip address are dropped if the limit is reached.",
              at_least=0),
    ConfigDef("max.connections.per.ip.overrides", STRING, "",
              "A comma-separated list of per-ip or hostname overrides to the default maximum "
              "number of connections, e.g. hostName:100,127.0.0.1:200."),
    ConfigDef("connection.failed.authentication.delay.ms", INT, 100,
              "Connection close delay on failed authentication: the time (in milliseconds) by "
              "which connection close will be delayed on authentication failure.",
              at_least=0, importance=Importance.LOW),
    # --- SASL -------------------------------------------------------------------------------
    ConfigDef("sasl.enabled.mechanisms", LIST, list(SASL_MECHANISMS),
              "The list of SASL mechanisms enabled in the Kafka server.",
              one_of=SASL_MECHANISMS),
    ConfigDef("sasl.jaas.config", PASSWORD, None,
              "JAAS login context parameters for SASL connections, in the format used by JAAS "
              "configuration files; for PLAIN, the users as user_<name>=\"<password>\" options "
              "of PlainLoginModule."),
    ConfigDef("sasl.server.max.receive.size", INT, 524288,
              "The maximum receive size allowed before and during initial SASL authentication.",
              importance=Importance.LOW),
    # --- TLS --------------------------------------------------------------------------------
    ConfigDef("ssl.keystore.type", STRING, "JKS",
              "The file format of the key store file; PEM is the one this server reads."),
    ConfigDef("ssl.keystore.location", STRING, None,
              "The location of the key store file: with ssl.keystore.type=PEM, a PEM file with "
              "the private key and the certificate chain."),
    ConfigDef("ssl.keystore.certificate.chain", PASSWORD, None,
              "Certificate chain in the format specified by 'ssl.keystore.type' (PEM: X.509 "
              "certificates)."),
    ConfigDef("ssl.keystore.key", PASSWORD, None,
              "Private key in the format specified by 'ssl.keystore.type' (PEM: PKCS#8, "
              "encrypted with ssl.key.password if set)."),
    ConfigDef("ssl.key.password", PASSWORD, None,
              "The password of the private key in the key store file or the PEM key specified "
              "in 'ssl.keystore.key'."),
    ConfigDef("ssl.truststore.type", STRING, "JKS",
              "The file format of the trust store file; PEM is the one this server reads."),
    ConfigDef("ssl.truststore.location", STRING, None,
              "The location of the trust store file (PEM: CA certificates)."),
    ConfigDef("ssl.truststore.certificates", PASSWORD, None,
              "Trusted certificates in the format specified by 'ssl.truststore.type'."),
    ConfigDef("ssl.client.auth", STRING, "none",
              "Configures kafka broker to request client authentication: required, requested "
              "or none.", one_of=("required", "requested", "none")),
    ConfigDef("ssl.enabled.protocols", LIST, ["TLSv1.2", "TLSv1.3"],
              "The list of protocols enabled for SSL connections.",
              one_of=("TLSv1.2", "TLSv1.3")),
)
