"""Spark's Python daemon (``spark.python.daemon.module``), importing PySpark from its installed
package instead of ``pyspark.zip``.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on its Python
workers' path. Python compiles a module imported from a zip file every time, since it caches no
bytecode there, so each daemon Spark starts spends most of a second compiling PySpark. A
job starts three daemons: one to create the data source, one to plan its read, and one to run
the tasks. This module drops those zips from the path when the same PySpark version is
installed as a package (a pip-installed Spark, where ``SPARK_HOME`` is that package), then runs
``pyspark.daemon``. Anywhere else it leaves the path as Spark set it.
"""

from __future__ import annotations

import importlib.util
import re
import runpy
import sys
import zipfile
from pathlib import Path

_VERSION = re.compile(r"""__version__[^=]*=\s*["']([^"']+)["']""")


def _version(text: str) -> str | None:
    match = _VERSION.search(text)
    return match.group(1) if match else None


def unzipped_path(path: list[str]) -> list[str]:
    """``path`` without Spark's zips, if PySpark of the zip's version is importable without
    them; else ``path`` unchanged."""
    zips = [p for p in path if p.endswith(".zip") and Path(p).name.startswith(("pyspark",
                                                                             "py4j"))]
    pyspark_zip = next((p for p in zips if Path(p).name == "pyspark.zip"), None)
    if pyspark_zip is None:
        return path
    rest = [p for p in path if p not in zips]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    py4j = importlib.machinery.PathFinder.find_spec("py4j", rest)
    if spec is None or py4j is None or not spec.submodule_search_locations:
        return path
    installed = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        with zipfile.ZipFile(pyspark_zip) as zf:
            zipped = zf.read("pyspark/version.py").decode()
        same = _version(installed.read_text()) == _version(zipped) is not None
    except (OSError, KeyError, zipfile.BadZipFile):
        return path
    return rest if same else path


if __name__ == "__main__":
    sys.path[:] = unzipped_path(sys.path)
    importlib.invalidate_caches()
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)
