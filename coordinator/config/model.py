"""One config definition: a name, a type, a default, a validator, as Kafka's ConfigDef has."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Any


class ConfigError(ValueError):
    """A bad config value, with Kafka's message text."""

    def __init__(self, name: str, value: object, message: str | None = None) -> None:
        shown = "null" if value is None else value
        text = f"Invalid value {shown} for configuration {name}"
        super().__init__(text + (f": {message}" if message else ""))
        self.name = name


class ConfigType(IntEnum):
    """Kafka's DescribeConfigs ``ConfigType`` codes."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class Importance(Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


_INT_BOUNDS = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1, "16-bit integer"),
    ConfigType.INT: (-(2**31), 2**31 - 1, "32-bit integer"),
    ConfigType.LONG: (-(2**63), 2**63 - 1, "64-bit integer"),
}
INT_MAX = 2**31 - 1
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: Any
    doc: str
    at_least: float | None = None
    at_most: float | None = None
    one_of: Sequence[str] = ()
    importance: Importance = Importance.MEDIUM
    extra: dict[str, Any] = field(default_factory=dict)

    def parse(self, raw: object) -> Any:
        """Parse a value as Kafka does (strings from properties files, or typed values)."""
        value = self._convert(raw)
        self.validate(value)
        return value

    def _convert(self, raw: object) -> Any:
        if raw is None:
            return None
        if self.type in _INT_BOUNDS:
            low, high, what = _INT_BOUNDS[self.type]
            if isinstance(raw, bool):
                raise ConfigError(self.name, raw, f"Expected value to be a {what}")
            text = str(raw).strip()
            if not _JAVA_INT.fullmatch(text):  # as Java's parseInt: no "1_000", no "1e3"
                raise ConfigError(self.name, raw, f"Not a number of type {self.type.name}")
            value = int(text)
            if not low <= value <= high:
                raise ConfigError(self.name, raw, f"Not a number of type {self.type.name}")
            return value
        if self.type is ConfigType.DOUBLE:
            text = str(raw).strip()
            try:
                number = float(text)
            except ValueError:
                raise ConfigError(self.name, raw, "Not a number of type DOUBLE") from None
            if "_" in text or not math.isfinite(number):  # NaN and infinities compare false
                raise ConfigError(self.name, raw, "Not a number of type DOUBLE")
            return number
        if self.type is ConfigType.BOOLEAN:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "false"):
                return text == "true"
            raise ConfigError(self.name, raw, "Expected value to be either true or false")
        if self.type is ConfigType.LIST:
            if isinstance(raw, list | tuple):
                return [str(item) for item in raw]
            text = str(raw).strip()
            return [item.strip() for item in text.split(",")] if text else []
        return str(raw).strip()

    def validate(self, value: Any) -> None:
        if value is None:
            return
        if self.at_least is not None and value < self.at_least:
            raise ConfigError(self.name, value, f"Value must be at least {_num(self.at_least)}")
        if self.at_most is not None and value > self.at_most:
            raise ConfigError(self.name, value, f"Value must be no more than {_num(self.at_most)}")
        if self.one_of:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if item not in self.one_of:
                    raise ConfigError(
                        self.name, item, f"String must be one of: {', '.join(self.one_of)}"
                    )

    def render(self, value: Any) -> str | None:
        """The value as DescribeConfigs shows it."""
        if value is None:
            return None
        if self.type is ConfigType.BOOLEAN:
            return "true" if value else "false"
        if self.type is ConfigType.LIST:
            return ",".join(value)
        if self.type is ConfigType.PASSWORD:
            return None
        return str(value)


def _num(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)
