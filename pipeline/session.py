"""The SparkSession the pipeline runs on (local by default, any master URL otherwise)."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

ROOT = str(Path(__file__).resolve().parent.parent)
WORKER_SITE = str(Path(__file__).resolve().parent / "worker_site")
"""First on the path of the Python processes Spark starts: its ``sitecustomize`` has them import
PySpark from its package, not ``pyspark.zip`` (:mod:`pipeline.worker_path`)."""

# The JVM starts faster without the C2 compiler for short jobs, with class-data sharing.
FAST_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto"


def quiet_warnings() -> None:
    """PySpark 4.3 warns about pandas 3 on every conversion; the conversions we use work."""
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    warnings.filterwarnings("ignore", message="The copy keyword is deprecated")


def prepare_environment() -> str:
    """Spark's Python workers run this interpreter, can import ``pipeline`` and ``storage``,
    and start with :data:`WORKER_SITE`'s ``sitecustomize``: returns the ``PYTHONPATH`` they
    need (:func:`worker_python_path`)."""
    quiet_warnings()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and p not in (ROOT, WORKER_SITE)]
    return os.pathsep.join([WORKER_SITE, ROOT, *paths])


@contextmanager
def worker_python_path(path: str) -> Iterator[None]:
    """``PYTHONPATH`` set to ``path`` while the driver's JVM starts (it and the workers it
    starts inherit its environment), then as it was: this process's own ``PYTHONPATH`` is left
    alone, so that what it starts later (a coordinator, in the suite) runs as it would have."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = path
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def build_session(master: str = "local[*]", *, app_name: str = "coordinator-pipeline",
                  shuffle_partitions: int | None = None, ui: bool = False,
                  progress: bool = True, fast_start: bool = True, class_archive: bool = True,
                  java_options: str = "") -> SparkSession:
    """A SparkSession with the ``coordinator-log`` source registered. ``fast_start`` starts
    the driver's JVM without the C2 compiler: it plans and collects small tables, and on
    local masters runs the tasks too, where the Python workers do most of the work.
    ``class_archive`` maps the JVM class archive if one was made
    (:mod:`pipeline.jvm_archive`); ``java_options`` are more options for the driver's JVM."""
    python_path = prepare_environment()
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", str(ui).lower())
        .config("spark.ui.showConsoleProgress", str(progress).lower())
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.PYTHONPATH", python_path)
        .config("spark.python.worker.reuse", "true")
        # adaptive execution may coalesce the small shuffles of persisted tables too (with
        # Spark's 200 shuffle partitions a cluster would run 200 tiny tasks per aggregation)
        .config("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
        # Arrow batches to Python workers stay bounded by maxRecordsPerBatch (10,000 rows);
        # a byte limit makes Spark size the whole batch again after every row it adds
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(2**31 - 1))
        # the job caches only its small digest: compressing it costs more than it saves
        .config("spark.sql.inMemoryColumnarStorage.compressed", "false")
    )
    if shuffle_partitions is None and master.startswith("local"):
        shuffle_partitions = 8  # the tables are small next to the scan: few, fast tasks
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    from pipeline import jvm_archive

    driver_options = [FAST_JVM if fast_start else "", java_options,
                      jvm_archive.java_options() if class_archive else ""]
    if any(driver_options):
        builder = builder.config("spark.driver.extraJavaOptions",
                                 " ".join(o for o in driver_options if o))
    with worker_python_path(python_path):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def register(spark: SparkSession) -> None:
    from pipeline.source import CoordinatorLogDataSource

    spark.dataSource.register(CoordinatorLogDataSource)
