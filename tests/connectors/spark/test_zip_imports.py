"""Zip imports' cache invalidation in Spark's workers (connectors.spark.datasource.
zip_imports): an unchanged archive is not re-read, a changed one is, and the patch is
on in the real workers that run the data source."""

from __future__ import annotations

import importlib
import os
import sys
import zipfile
import zipimport
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.spark.datasource import zip_imports


@pytest.fixture
def patched() -> Iterator[None]:
    original = zipimport.zipimporter.invalidate_caches
    zip_imports.cheap_zip_invalidation()
    try:
        yield
    finally:
        zipimport.zipimporter.invalidate_caches = original  # type: ignore[method-assign]


def _zip(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in modules.items():
            z.writestr(f"{name}.py", text)


def test_unchanged_archive_is_read_once_and_a_changed_one_again(
    tmp_path: Path, patched: None
) -> None:
    archive = tmp_path / "lib.zip"
    _zip(archive, {"zipped_one": "X = 1\n"})
    importer = zipimport.zipimporter(str(archive))
    importer.invalidate_caches()  # the first call after the patch reads it
    files = importer._files  # type: ignore[attr-defined]
    importer.invalidate_caches()
    assert importer._files is files  # type: ignore[attr-defined]  # not re-read
    _zip(archive, {"zipped_one": "X = 1\n", "zipped_two": "Y = 2\n"})
    os.utime(archive, ns=(1, 1))  # a new stamp whatever the clock's resolution
    importer.invalidate_caches()
    assert importer.find_spec("zipped_two") is not None


def test_new_module_in_a_changed_zip_on_the_path_imports(tmp_path: Path, patched: None) -> None:
    archive = tmp_path / "path.zip"
    _zip(archive, {"zipped_a": "A = 1\n"})
    sys.path.insert(0, str(archive))
    try:
        assert importlib.import_module("zipped_a").A == 1
        importlib.invalidate_caches()
        _zip(archive, {"zipped_a": "A = 1\n", "zipped_b": "B = 2\n"})
        os.utime(archive, ns=(2, 2))
        importlib.invalidate_caches()
        assert importlib.import_module("zipped_b").B == 2
    finally:
        sys.path.remove(str(archive))
        sys.path_importer_cache.pop(str(archive), None)
        for name in ("zipped_a", "zipped_b"):
            sys.modules.pop(name, None)


def test_not_patched_outside_spark_workers() -> None:
    assert not zip_imports.in_spark_worker()
    assert zipimport.zipimporter.invalidate_caches.__name__ == "invalidate_caches"


@pytest.mark.spark
def test_patched_in_the_workers_that_run_the_data_source(spark: Any) -> None:
    import pyarrow as pa

    def probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import zipimport

        import connectors.spark.datasource  # noqa: F401  # what a task of the source imports

        for _ in batches:
            pass
        name = zipimport.zipimporter.invalidate_caches.__name__
        yield pa.RecordBatch.from_pydict({"name": [name]})

    rows = spark.range(1, numPartitions=1).mapInArrow(probe, "name string").collect()
    assert [r.name for r in rows] == ["_invalidate_when_changed"]
