"""Where the files go: the local file system, or any Hadoop file system through the
SparkSession's JVM (hdfs://, viewfs://, and file:// as well).

Both offer the few operations the commit protocol needs (see `topic_writer`): make
directories, write a Parquet file from an Arrow table, publish by rename, list files,
and small state files written whole; and the schema in a Parquet file's footer, which
is all `table_schema` reads of the files a table already holds. The local one fsyncs
files and directories, so a published file survives a power cut; Hadoop's rename is
atomic on HDFS.

Errors become `StorageError` (a ConnectError) carrying the path, so a bad or
unwritable store shows in the task's status with the path in it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from connect.api import ConnectError

__all__ = ["HadoopStorage", "LocalStorage", "Storage", "StorageError"]

#: What a Parquet file starts and ends with.
_MAGIC = b"PAR1"
_TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"


class StorageError(ConnectError):
    """A file-system operation on `path` failed."""

    def __init__(self, action: str, path: str, cause: BaseException | str) -> None:
        self.action = action
        self.path = path
        super().__init__(f"cannot {action} {path}: {cause}")


class Storage(Protocol):
    root: str

    def check_writable(self) -> None: ...

    def write_parquet(self, table: pa.Table, path: str, codec: str) -> None: ...

    def read_parquet_schema(self, path: str) -> pa.Schema: ...

    def stored_schema(self, schema: pa.Schema) -> pa.Schema: ...

    def rename(self, src: str, dst: str) -> None: ...

    def exists(self, path: str) -> bool: ...

    def delete(self, path: str) -> None: ...

    def walk_files(self, path: str) -> Iterator[str]: ...

    def read_text(self, path: str) -> str | None: ...

    def write_text(self, path: str, text: str) -> None: ...


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalStorage:
    """Paths relative to a local root directory; everything fsynced."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self._root = root

    def _abs(self, path: str) -> Path:
        return self._root / path

    def check_writable(self) -> None:
        probe = self._root / f".tributary-probe-{uuid.uuid4().hex}"
        try:
            self._root.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise StorageError("write to", str(self._root), exc.strerror or exc) from exc

    def write_parquet(self, table: pa.Table, path: str, codec: str) -> None:
        target = self._abs(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                pq.write_table(table, out, compression=codec)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            raise StorageError("write", str(target), exc.strerror or exc) from exc

    def stored_schema(self, schema: pa.Schema) -> pa.Schema:
        """What a reader finds in the footer of a file of `schema`: pyarrow keeps Arrow's
        types (its ARROW:schema metadata restores the ones Parquet lacks)."""
        return schema

    def read_parquet_schema(self, path: str) -> pa.Schema:
        target = self._abs(path)
        try:
            return pq.read_schema(target)
        except OSError as exc:
            raise StorageError("read", str(target), exc.strerror or exc) from exc
        except pa.ArrowException as exc:
            raise StorageError("read", str(target), exc) from exc

    def rename(self, src: str, dst: str) -> None:
        source, target = self._abs(src), self._abs(dst)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
            _fsync_dir(target.parent)
        except OSError as exc:
            raise StorageError("publish", str(target), exc.strerror or exc) from exc

    def exists(self, path: str) -> bool:
        return self._abs(path).exists()

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._abs(path).unlink()

    def walk_files(self, path: str) -> Iterator[str]:
        """Paths (relative to the root) of every file under `path`."""
        base = self._abs(path)
        if not base.is_dir():
            return
        for directory, _dirs, files in os.walk(base):
            rel = Path(directory).relative_to(self._root)
            for name in files:
                yield str(rel / name)

    def read_text(self, path: str) -> str | None:
        try:
            return self._abs(path).read_text()
        except FileNotFoundError:
            return None

    def write_text(self, path: str, text: str) -> None:
        target = self._abs(path)
        tmp = target.with_name(target.name + ".tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
            _fsync_dir(target.parent)
        except OSError as exc:
            raise StorageError("write", str(target), exc.strerror or exc) from exc


class HadoopStorage:
    """A Hadoop FileSystem (by URL scheme) through the SparkSession's JVM; the Parquet
    files are written by Spark itself: `createDataFrame(arrow table)` → one part file
    into a scratch directory → renamed to its place."""

    def __init__(self, root: str, spark: Any) -> None:
        self.root = root
        self._spark = spark
        jvm = spark._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        conf = spark._jsc.hadoopConfiguration()
        self._fs = self._Path(root).getFileSystem(conf)

    def _p(self, path: str) -> Any:
        return self._Path(f"{self.root}/{path}" if path else self.root)

    def _call(self, action: str, path: str, fn: Any) -> Any:
        try:
            return fn()
        except Exception as exc:
            text = str(exc).strip().splitlines()
            raise StorageError(action, path, text[0] if text else exc) from None

    def check_writable(self) -> None:
        probe = f".tributary-probe-{uuid.uuid4().hex}"
        self._call("write to", self.root, lambda: self._fs.mkdirs(self._p("")))
        self.write_text(probe, "")
        self.delete(probe)

    def write_parquet(self, table: pa.Table, path: str, codec: str) -> None:
        scratch = f"{path}.dir"
        url = f"{self.root}/{scratch}"
        df = self._spark.createDataFrame(table)
        self._call(
            "write",
            url,
            lambda: (
                df.coalesce(1)
                .write.mode("overwrite")
                .option("compression", "uncompressed" if codec == "none" else codec)
                .parquet(url)
            ),
        )
        parts = [
            s.getPath().getName()
            for s in self._fs.listStatus(self._p(scratch))
            if s.getPath().getName().endswith(".parquet")
        ]
        if len(parts) != 1:
            raise StorageError("write", url, f"Spark wrote {len(parts)} part files, not 1")
        self.rename(f"{scratch}/{parts[0]}", path)
        self._fs.delete(self._p(scratch), True)

    def stored_schema(self, schema: pa.Schema) -> pa.Schema:
        """What pyarrow finds in the footer of a file Spark wrote from a table of
        `schema`: Spark's own types, and timestamps as the session's
        spark.sql.parquet.outputTimestampType says (INT96 reads as a zone-less
        timestamp[ns])."""
        encoding = str(self._spark.conf.get(_TIMESTAMP_TYPE, "INT96")).upper()
        return pa.schema([f.with_type(_spark_stored(f.type, encoding)) for f in schema])

    def read_parquet_schema(self, path: str) -> pa.Schema:
        """The footer alone, two reads from the file's end (a Parquet file ends with its
        metadata, the metadata's length and `PAR1`): pyarrow parses it from a buffer
        that has the same ending."""
        io = self._spark._jvm.org.apache.commons.io.IOUtils

        def read() -> bytes:
            target = self._p(path)
            size = self._fs.getFileStatus(target).getLen()
            stream = self._fs.open(target)
            try:
                stream.seek(max(0, size - 8))
                tail = bytes(io.toByteArray(stream, min(size, 8)))
                length = int.from_bytes(tail[:4], "little") if len(tail) == 8 else -1
                if tail[4:] != _MAGIC or not 0 < length <= size - 12:
                    raise ValueError("not a Parquet file")
                stream.seek(size - 8 - length)
                return bytes(io.toByteArray(stream, length)) + tail
            finally:
                stream.close()

        ending = self._call("read", f"{self.root}/{path}", read)
        try:
            return pq.read_schema(pa.BufferReader(_MAGIC + ending))
        except pa.ArrowException as exc:
            raise StorageError("read", f"{self.root}/{path}", exc) from exc

    def rename(self, src: str, dst: str) -> None:
        target = self._p(dst)
        self._call("publish", dst, lambda: self._fs.mkdirs(target.getParent()))
        if not self._call("publish", dst, lambda: self._fs.rename(self._p(src), target)):
            raise StorageError("publish", f"{self.root}/{dst}", "rename refused")

    def exists(self, path: str) -> bool:
        return bool(self._fs.exists(self._p(path)))

    def delete(self, path: str) -> None:
        self._fs.delete(self._p(path), False)

    def walk_files(self, path: str) -> Iterator[str]:
        base = self._p(path)
        if not self._fs.exists(base):
            return
        prefix = len(str(self._p("")).rstrip("/")) + 1
        files = self._fs.listFiles(base, True)
        while files.hasNext():
            yield str(files.next().getPath())[prefix:]

    def read_text(self, path: str) -> str | None:
        if not self.exists(path):
            return None
        stream = self._fs.open(self._p(path))
        try:
            data = self._spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
        finally:
            stream.close()
        return bytes(data).decode()

    def write_text(self, path: str, text: str) -> None:
        tmp = f"{path}.tmp"

        def write() -> None:
            out = self._fs.create(self._p(tmp), True)
            try:
                out.write(bytearray(text.encode()))
                out.hsync()
            finally:
                out.close()

        self._call("write", tmp, write)
        self._fs.delete(self._p(path), False)
        self.rename(tmp, path)


def _spark_stored(kind: pa.DataType, timestamps: str) -> pa.DataType:
    """An Arrow type as pyarrow reads it back from a file Spark wrote (see
    `HadoopStorage.stored_schema`)."""
    t = pa.types
    if t.is_timestamp(kind):
        if kind.tz is None:  # Spark's TimestampNTZ: always INT64 micros, not UTC-adjusted
            return pa.timestamp("us")
        if timestamps == "INT96":
            return pa.timestamp("ns")
        return pa.timestamp("ms" if timestamps == "TIMESTAMP_MILLIS" else "us", "UTC")
    if t.is_struct(kind):
        return pa.struct([f.with_type(_spark_stored(f.type, timestamps)) for f in kind])
    if t.is_list(kind) or t.is_large_list(kind):
        return pa.list_(_spark_stored(kind.value_type, timestamps))
    if t.is_map(kind):
        key = _spark_stored(kind.key_type, timestamps)
        return pa.map_(key, _spark_stored(kind.item_type, timestamps))
    if t.is_large_string(kind):
        return pa.string()
    if t.is_large_binary(kind):
        return pa.binary()
    return kind
