"""Published connector configs as the conformance suite runs them: read as published,
then `localize()`d, the one documented change made to any of them.

The copies live in tests/data/published/ (each directory's SOURCES.md, or each file's
header, names the repository, path and commit). Three shapes are read, as Kafka Connect
reads them:
- a `.properties` file (`connect-standalone.sh worker.properties connector.properties`);
- a `{"name": ..., "config": {...}}` JSON file (`POST /connectors`);
- a bare JSON config map: the body of a `PUT /connectors/<name>/config` (the demo-scene
  copies; the connector's name is the one in the URL, kept in the file name after
  `-L<line>-`), or a flat map with its own `name` (a standalone connector file).
JSON values go through the REST API's own conversion (numbers and booleans as Kafka's
REST API takes them), so `"tasks.max": 1` is read as the worker reads it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connect import properties
from connect.rest.params import config_map

__all__ = ["PUBLISHED", "Site", "load", "localize"]

PUBLISHED = Path(__file__).resolve().parent.parent / "data" / "published"


@dataclass(frozen=True)
class Site:
    """Where this test's servers are: what a published config's hosts, ports, paths,
    buckets and credentials become."""

    directory: Path
    mysql: tuple[str, int, str, str, str] | None = None  # host, port, database, user, password
    postgres: tuple[str, int, str, str, str] | None = None
    s3: dict[str, str] | None = None  # the local server's bucket keys (tests.s3.Bucket.props)


def load(relative: str) -> tuple[str, dict[str, str]]:
    """The connector name and config of a published file, exactly as published."""
    path = PUBLISHED / relative
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".properties":
        config = properties.parse(text)
        return config["name"], config
    body: Any = json.loads(text)
    if isinstance(body.get("config"), dict):
        return str(body["name"]), {
            k: v for k, v in config_map(body["config"]).items() if v is not None
        }
    # <source>-L<line>-<connector name>.json, the body of a PUT .../config (the name in
    # its URL), or a file of a PUT with no name of its own (named as the file)
    named = re.fullmatch(r".*?-L\d+-(.+)", path.stem)
    name = body.get("name") or (named[1] if named else path.stem)
    return name, {k: v for k, v in config_map(body).items() if v is not None}


_BINLOG_CONNECTOR = re.compile(r"(MySql|MariaDb)Connector$")
_JDBC_NETWORK = re.compile(r"^jdbc:(?P<kind>mysql|postgresql)://[^/]+/(?P<db>[^?;]*)(?P<rest>.*)$")


def localize(config: dict[str, str], site: Site) -> dict[str, str]:
    """`config` with its hosts, ports, paths, buckets and credentials moved to `site`;
    nothing else is touched. The rules, one per kind of key:
    1. `connection.url`: a `jdbc:mysql://` or `jdbc:postgresql://` URL gets the site's
       host, port and database; its `user=` / `password=` parameters (if any) the
       site's credentials; a relative `jdbc:sqlite:<file>` becomes the file in the
       site's directory (the worker's working directory in the published setup).
    2. `connection.user` / `connection.password`: the site's credentials for the
       database the URL names.
    3. Debezium's `database.hostname`, `database.port`, `database.user`,
       `database.password`, `database.dbname`: the site's PostgreSQL; for Debezium's
       MySQL and MariaDB connectors the site's MySQL server (the database names their
       filters list are kept: the case creates them).
    4. `s3.bucket.name`: the site's bucket, and the endpoint and credentials of the
       local S3 server beside it (`store.url`, `aws.access.key.id`,
       `aws.secret.access.key`: a published config reaches AWS through the
       environment's credentials instead).
    5. FileStream's `file`: the file of that name in the site's directory.
    6. The HDFS sinks' `hdfs.url` / `store.url`: the directory `hdfs` in the site's
       directory, as a file:// URL (the store's paths under it are kept).
    """
    out = dict(config)
    server = None
    url = out.get("connection.url", "")
    # Step 1
    if m := _JDBC_NETWORK.match(url):
        server = site.mysql if m["kind"] == "mysql" else site.postgres
        assert server is not None, f"{url} needs the site's {m['kind']} server"
        host, port, database, user, password = server
        rest = re.sub(r"([?&;]user=)[^&;]*", rf"\g<1>{user}", m["rest"])
        rest = re.sub(r"([?&;]password=)[^&;]*", rf"\g<1>{password}", rest)
        out["connection.url"] = f"jdbc:{m['kind']}://{host}:{port}/{database}{rest}"
    elif url.startswith("jdbc:sqlite:") and not url.startswith("jdbc:sqlite:/"):
        out["connection.url"] = f"jdbc:sqlite:{site.directory / url[len('jdbc:sqlite:') :]}"
    # Step 2
    if server is not None:
        if "connection.user" in out:
            out["connection.user"] = server[3]
        if "connection.password" in out:
            out["connection.password"] = server[4]
    # Step 3
    if "database.hostname" in out and _BINLOG_CONNECTOR.search(out.get("connector.class", "")):
        assert site.mysql is not None, "a Debezium MySQL config needs the site's MySQL"
        host, port, _, user, password = site.mysql
        out.update(
            {
                "database.hostname": host,
                "database.port": str(port),
                "database.user": user,
                "database.password": password,
            }
        )
    elif "database.hostname" in out:
        assert site.postgres is not None, "a Debezium config needs the site's PostgreSQL"
        host, port, database, user, password = site.postgres
        out.update(
            {
                "database.hostname": host,
                "database.port": str(port),
                "database.user": user,
                "database.password": password,
                "database.dbname": database,
            }
        )
    # Step 4
    if "s3.bucket.name" in out:
        assert site.s3 is not None, "an S3 config needs the site's bucket"
        for key in ("s3.bucket.name", "store.url", "aws.access.key.id", "aws.secret.access.key"):
            out[key] = site.s3[key]
    # Step 5
    if "file" in out and not Path(out["file"]).is_absolute():
        out["file"] = str(site.directory / out["file"])
    # Step 6
    for key in ("hdfs.url", "store.url"):
        if out.get(key, "").startswith("hdfs://"):
            out[key] = (site.directory / "hdfs").as_uri()
    return out
