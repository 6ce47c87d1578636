"""One SparkSession for the whole pipeline suite: local[2], UI off, few shuffle partitions,
a JVM tuned to start fast. Java is a requirement of the suite, not a reason to skip."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipeline.session import build_session


def pytest_configure(config: pytest.Config) -> None:
    # PySpark 4.3 warns about pandas 3 on every conversion; the conversions used here work.
    config.addinivalue_line("filterwarnings",
                            "ignore:PySpark does not yet fully support pandas:FutureWarning")
    config.addinivalue_line("filterwarnings", "ignore:The copy keyword is deprecated")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", app_name="pipeline-tests", shuffle_partitions=2,
                            ui=False, progress=False, fast_start=True)
    try:
        yield session
    finally:
        session.stop()
