"""A tiny JSON client of the coordinator's HTTP control endpoint (``control.listener``).

    control = ControlClient("http://127.0.0.1:8080")
    control.get("/health")                                   # {"status": "ok", "faults": 0}
    control.post("/faults", {"kind": "error", "api": "OffsetCommit",
                             "error": "REBALANCE_IN_PROGRESS", "count": 1})

Any answer other than 2xx raises ``ControlError`` with the status and the server's message.
Only the standard library (``urllib``) is used.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

DEFAULT_TIMEOUT_S = 30.0


class ControlError(RuntimeError):
    """The control endpoint refused a request (``status``: its HTTP status; ``body``: its JSON
    answer), or could not be reached (``status`` 0)."""

    def __init__(self, status: int, message: str, body: Any = None) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message
        self.body = body


class ControlClient:
    def __init__(self, base_url: str, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """``base_url``: ``http://host:port`` (the server logs it in its ``control listening``
        event; ``Coordinator.control_url`` has it)."""
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"ControlClient({self.base_url!r})"

    def request(self, method: str, path: str, body: Any = None,
                query: Mapping[str, Any] | None = None) -> Any:
        """Send ``body`` (as JSON, if not None) and return the decoded JSON answer."""
        url = self.base_url + "/" + path.lstrip("/")
        if query:
            url += "?" + urllib.parse.urlencode(
                {key: value for key, value in query.items() if value is not None})
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return _decode(response.read())
        except urllib.error.HTTPError as exc:
            answer = _decode(exc.read())
            message = answer.get("error") if isinstance(answer, dict) else None
            raise ControlError(exc.code, str(message or exc.reason), answer) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ControlError(0, f"cannot reach the control endpoint at {self.base_url}: "
                               f"{reason}") from None

    def get(self, path: str, query: Mapping[str, Any] | None = None, **params: Any) -> Any:
        return self.request("GET", path, query={**(query or {}), **params})

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, {} if body is None else body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def health(self) -> dict[str, Any]:
        answer: dict[str, Any] = self.get("/health")
        return answer


def _decode(data: bytes) -> Any:
    if not data.strip():
        return None
    try:
        return json.loads(data)
    except ValueError:
        return {"error": data.decode(errors="replace")}
