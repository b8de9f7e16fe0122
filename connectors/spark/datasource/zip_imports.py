"""Zip imports' cache invalidation made cheap in Spark's Python workers, which run
this data source's planning, tasks and commits.

Why. Before every task, planner call and commit, a PySpark 4.1 worker calls
`importlib.invalidate_caches()` (`pyspark.worker_util.setup_spark_files`). On Python
3.10 and 3.11 that re-reads, in pure Python, the whole directory of a zip once per
zipimporter — and the workers import pyspark and py4j from `pyspark.zip` and the py4j
zip, with one zipimporter per package directory: about 15 re-reads of a 1,300-entry
directory, ~0.1 s of a core each time. Under py-spy over the KSQL-style pipeline
(bench/streams_bench.py) it was 38% of the Python samples of the Spark processes: a
micro-batch of `foreachBatch` + batch write makes a dozen such calls. Python 3.12 made
the invalidation lazy (CPython issue 103200) and Spark 4.2 calls it only when new
files arrived (SPARK-54744); PySpark 4.1 on Python 3.11 has neither.

What. `invalidate_caches` of a zipimporter re-reads its archive only when the
archive's size or modification time differs from its own last read (or it has not
read it since the patch): a changed archive is reloaded as before; the zips of an
installed Spark do not change while it runs. It is patched on import of
`connectors.spark.datasource`, in Spark's worker processes only (their `__main__` is
a `pyspark.` module: `pyspark.daemon`, the streaming runners): the worker's first
call after the import still re-reads, every later one of a reused worker is a stat.
"""

from __future__ import annotations

import os
import sys
import zipimport

__all__ = ["cheap_zip_invalidation", "in_spark_worker"]

_reload = zipimport.zipimporter.invalidate_caches
#: The attribute of a zipimporter holding its archive's (size, mtime in ns) at its
#: last read (zipimporter is a Python class: its instances take attributes).
_STAMP = "_tributary_stamp"


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _invalidate_when_changed(self: zipimport.zipimporter) -> None:
    stamp = _stamp(self.archive)
    if stamp is not None and getattr(self, _STAMP, None) == stamp:
        return  # the directory this importer holds is the archive's
    _reload(self)
    setattr(self, _STAMP, stamp)


def in_spark_worker() -> bool:
    """Whether this process is one of Spark's Python workers (or their daemon)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return str(getattr(spec, "name", "")).startswith("pyspark.")


def cheap_zip_invalidation() -> None:
    """Patch `zipimport.zipimporter.invalidate_caches` in this process (idempotent)."""
    zipimport.zipimporter.invalidate_caches = _invalidate_when_changed  # type: ignore[method-assign]
