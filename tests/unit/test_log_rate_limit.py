"""The bad-request log line's rate limit, in virtual time."""

from __future__ import annotations

from coordinator.observability.ratelimit import LogRateLimit


def test_one_line_per_key_per_interval_with_the_count_left_out() -> None:
    now = [0.0]
    limit = LogRateLimit(10.0, clock=lambda: now[0])
    assert limit.allow((0, 2)) == 0
    assert [limit.allow((0, 2)) for _ in range(1366)] == [None] * 1366
    assert limit.allow((1, 3)) == 0  # another API and version has its own budget
    now[0] = 10.0
    assert limit.allow((0, 2)) == 1366
    assert limit.allow((0, 2)) is None
    now[0] = 25.0
    assert limit.allow((0, 2)) == 1
