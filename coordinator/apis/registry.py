"""The table of APIs we serve: key, version range and handler. ApiVersions reads it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from protocol import ApiKey, known_versions

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
    def __init__(self) -> None:
        self._specs: dict[int, ApiSpec] = {}

    def register(self, key: ApiKey, min_version: int, max_version: int, handler: Handler) -> None:
        codec = known_versions(key)
        if min_version not in codec or max_version not in codec:
            raise ValueError(f"{key.name} {min_version}-{max_version} outside codec's {codec}")
        self._specs[key] = ApiSpec(key, min_version, max_version, handler)

    def get(self, api_key: int) -> ApiSpec | None:
        return self._specs.get(api_key)

    def specs(self) -> list[ApiSpec]:
        return sorted(self._specs.values(), key=lambda spec: spec.key)
