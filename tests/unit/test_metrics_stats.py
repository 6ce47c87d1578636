"""The windowed statistics behind the sensors, on a fake clock (seconds)."""

from __future__ import annotations

import pytest

from metrics import BusyRatio, SampledWindow, WindowConfig


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


CONFIG = WindowConfig(samples=2, window_s=30.0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_window_config_is_validated() -> None:
    with pytest.raises(ValueError):
        WindowConfig(samples=0)
    with pytest.raises(ValueError):
        WindowConfig(window_s=0)


def test_rate_divides_by_at_least_one_full_window_like_kafka(clock: FakeClock) -> None:
    window = SampledWindow(CONFIG, clock)
    window.record(6)
    # a single early event over (samples - 1) = 1 window of 30 s, not over ~0 s
    assert window.rate() == pytest.approx(6 / 30)
    clock.now += 45
    window.record(3)
    assert window.rate() == pytest.approx(9 / 45)


def test_samples_older_than_the_window_are_dropped(clock: FakeClock) -> None:
    window = SampledWindow(CONFIG, clock)
    window.record(5)
    clock.now += 31
    window.record(7)
    assert window.count() == 2 and window.total() == 12
    clock.now += 30  # the first sample (started 61 s ago) is past samples * window
    assert window.count() == 1 and window.total() == 7
    clock.now += 60
    assert window.count() == 0
    assert window.max() == 0 and window.min() == 0 and window.avg() == 0
    assert window.rate() == 0


def test_min_max_avg(clock: FakeClock) -> None:
    window = SampledWindow(CONFIG, clock)
    for v in (4, 1, 7):
        window.record(v)
    assert (window.min(), window.max(), window.avg()) == (1, 7, 4)


def test_percentiles_nearest_rank_and_max(clock: FakeClock) -> None:
    window = SampledWindow(CONFIG, clock, keep_values=True)
    for v in range(1, 1001):
        window.record(float(v))
    p = window.percentiles()
    assert p == {"p50": 500, "p95": 950, "p99": 990, "p999": 999, "max": 1000}
    empty = SampledWindow(CONFIG, clock, keep_values=True).percentiles()
    assert set(empty.values()) == {0.0}


def test_percentiles_slide_with_the_window(clock: FakeClock) -> None:
    window = SampledWindow(CONFIG, clock, keep_values=True)
    window.record(100.0)
    clock.now += 31
    window.record(1.0)
    assert window.percentiles()["max"] == 100
    clock.now += 30
    assert window.percentiles() == {"p50": 1, "p95": 1, "p99": 1, "p999": 1, "max": 1}


def test_values_are_bounded_by_a_reservoir_but_max_stays_exact(clock: FakeClock) -> None:
    window = SampledWindow(CONFIG, clock, keep_values=True, max_values=100)
    for v in range(10_000):
        window.record(float(v))
    assert len(window.values()) == 100
    assert window.count() == 10_000
    assert window.percentiles()["max"] == 9999
    assert 2000 < window.percentiles()["p50"] < 8000  # a uniform sample's median


def test_busy_ratio_avg_and_min(clock: FakeClock) -> None:
    clock.now = 600.0  # a window boundary
    ratio = BusyRatio(CONFIG, clock)
    assert ratio.avg() == 1.0 and ratio.min() == 1.0
    clock.now += 30
    ratio.record_busy(15.0, now=629.0)  # the first window half busy
    clock.now = 659.0  # the second window, idle so far
    assert ratio.avg() == pytest.approx(1 - 15 / 59)  # 30 s + the 29 s so far
    assert ratio.min() == pytest.approx(0.5)
    clock.now += 60  # both windows idle now
    assert ratio.avg() == 1.0 and ratio.min() == 1.0


def test_busy_ratio_ignores_a_barely_started_window_for_min(clock: FakeClock) -> None:
    clock.now = 600.0
    ratio = BusyRatio(CONFIG, clock)
    clock.now = 630.5
    ratio.record_busy(0.4)  # 0.4 s busy in the 0.5 s of the new window
    # the full previous window was idle: the lowest window is that of the average
    assert ratio.avg() == pytest.approx(1 - 0.4 / 30.5)
    assert ratio.min() == ratio.avg()
    assert ratio.min() > 0.9  # not "0.2 idle" for one event after the boundary
    clock.now = 646.0
    assert ratio.min() == pytest.approx(1 - 0.4 / 16)


def test_busy_ratio_counts_threads_and_clamps(clock: FakeClock) -> None:
    clock.now = 600.0
    ratio = BusyRatio(CONFIG, clock, threads=2)
    clock.now = 610.0
    ratio.record_busy(10.0)
    assert ratio.avg() == pytest.approx(0.5)
    ratio.record_busy(100.0)
    assert ratio.avg() == 0.0


def test_record_many_is_record_of_each_value() -> None:
    from metrics.stats import SampledWindow, WindowConfig

    values = [float(v % 97) for v in range(10_000)]  # more than a sample keeps: the reservoir
    one, many = (SampledWindow(WindowConfig(), lambda: 5.0, keep_values=True, seed=3)
                 for _ in range(2))
    for value in values:
        one.record(value)
    many.record_many(values[:5000])
    many.record_many(values[5000:])
    assert many.count() == one.count() == 10_000
    assert many.total() == one.total() and many.max() == one.max() and many.min() == one.min()
    assert many.percentiles([("p50", 0.5), ("p99", 0.99)]) == \
        one.percentiles([("p50", 0.5), ("p99", 0.99)])
