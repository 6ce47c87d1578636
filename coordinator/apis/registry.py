"""The table of APIs we serve: key, version range and handler. ApiVersions reads it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from protocol import ApiKey, known_versions
from protocol.legacy import LEGACY_APIS, LegacyApi

from .context import RequestContext

Handler = Callable[[RequestContext, Any], Any | Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    key: ApiKey
    min_version: int
    max_version: int
    handler: Handler

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


class ApiRegistry:
    def __init__(self, legacy_versions: bool = True) -> None:
        self._specs: dict[int, ApiSpec] = {}
        self.legacy: dict[int, LegacyApi] = dict(LEGACY_APIS) if legacy_versions else {}
        """The versions Kafka 4.0 removed that are served too (``protocol/legacy.py``), by API
        key; empty when the server behaves as Kafka 4.x."""

    def oldest(self, spec: ApiSpec) -> int:
        """The oldest version served of the API: what ApiVersions advertises."""
        legacy = self.legacy.get(spec.key)
        return spec.min_version if legacy is None else min(legacy.oldest, spec.min_version)

    def versions(self, spec: ApiSpec) -> range:
        """Every version served of the API, the removed ones included."""
        return range(self.oldest(spec), spec.max_version + 1)

    def register(self, key: ApiKey, min_version: int, max_version: int, handler: Handler) -> None:
        codec = known_versions(key)
        if min_version not in codec or max_version not in codec:
            raise ValueError(f"{key.name} {min_version}-{max_version} outside codec's {codec}")
        self._specs[key] = ApiSpec(key, min_version, max_version, handler)

    def get(self, api_key: int) -> ApiSpec | None:
        return self._specs.get(api_key)

    def specs(self) -> list[ApiSpec]:
        return sorted(self._specs.values(), key=lambda spec: spec.key)
