"""Broker configuration: Kafka's names, types, defaults, bounds and error messages."""

from .definitions import BROKER_CONFIGS, TOPIC_CONFIGS
from .model import ConfigDef, ConfigError, ConfigType, Importance
from .properties import parse_properties
from .server_config import ServerConfig

__all__ = [
    "BROKER_CONFIGS",
    "TOPIC_CONFIGS",
    "ConfigDef",
    "ConfigError",
    "ConfigType",
    "Importance",
    "ServerConfig",
    "parse_properties",
]
