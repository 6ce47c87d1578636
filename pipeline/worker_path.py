"""The path of the Python processes Spark starts, without ``pyspark.zip`` where PySpark is
installed as a package.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on its Python
processes' path. Python compiles a module imported from a zip file every time, since it caches
no bytecode there, so each Python daemon Spark starts spends most of a second compiling
PySpark, and a job starts three: one to create the data source, one to plan its read, and one
for the tasks. ``pipeline/worker_site/sitecustomize.py``, first on those processes' path
(:func:`pipeline.session.prepare_environment`), drops the zips when the same PySpark version is
installed as a package (a pip-installed Spark, whose ``SPARK_HOME`` is that package); anywhere
else the path stays as Spark set it.
"""

from __future__ import annotations

import importlib.machinery
import re
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
