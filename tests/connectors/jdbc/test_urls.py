"""connectors.jdbc.urls: JDBC URLs as the drivers' own documentation writes them, each
translated to the SQLAlchemy URL and connect arguments that mean the same; parameters
refused by name; passwords never in a message. Pure: no database is reached here (the
real servers are in test_urls_databases.py)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from connect.api import ConfigError
from connectors.jdbc.sink_config import CONFIG as SINK_CONFIG
from connectors.jdbc.source_config import CONFIG as SOURCE_CONFIG
from connectors.jdbc.urls import (
    database_url,
    libpq_params,
    mask_url,
    resolve_driver,
    translate,
)

PGJDBC = "https://jdbc.postgresql.org/documentation/use/"
PGJDBC_SSL = "https://jdbc.postgresql.org/documentation/ssl/"
CONNECTOR_J = "https://dev.mysql.com/doc/connector-j/en/connector-j-reference-jdbc-url-format.html"
CONNECTOR_J_PROPS = (
    "https://dev.mysql.com/doc/connector-j/en/connector-j-reference-configuration-properties.html"
)
MARIADB_J = "https://mariadb.com/kb/en/about-mariadb-connector-j/"
MSSQL = "https://learn.microsoft.com/en-us/sql/connect/jdbc/building-the-connection-url"
MSSQL_PROPS = "https://learn.microsoft.com/en-us/sql/connect/jdbc/setting-the-connection-properties"
ORACLE = (
    "https://docs.oracle.com/en/database/oracle/oracle-database/23/jjdbc/data-sources-and-URLs.html"
)
CONFLUENT_SOURCE = (
    "https://docs.confluent.io/kafka-connectors/jdbc/current/source-connector/overview.html"
)
CONFLUENT_SINK = (
    "https://docs.confluent.io/kafka-connectors/jdbc/current/sink-connector/overview.html"
)
CONFLUENT_SOURCE_OPTIONS = (
    "https://docs.confluent.io/kafka-connectors/jdbc/current/source-connector/"
    "source_config_options.html"
)
XERIAL = "https://github.com/xerial/sqlite-jdbc#usage"
DESCRIPTOR = (
    "(DESCRIPTION=(ADDRESS=(PROTOCOL=TCP)(HOST=h)(PORT=1521))(CONNECT_DATA=(SERVICE_NAME=s)))"
)

# (source page, JDBC URL, the SQLAlchemy URL it means, the connect arguments)
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    # ---- PostgreSQL: pgJDBC's URL forms (host localhost, port 5432 by default)
    (PGJDBC, "jdbc:postgresql:accounting", "postgresql+psycopg2://localhost:5432/accounting", {}),
    (PGJDBC, "jdbc:postgresql:/", "postgresql+psycopg2://localhost:5432", {}),
    (PGJDBC, "jdbc:postgresql://db.example/test", "postgresql+psycopg2://db.example:5432/test", {}),
    (PGJDBC, "jdbc:postgresql://db.example/", "postgresql+psycopg2://db.example:5432", {}),
    (
        PGJDBC,
        "jdbc:postgresql://db.example:5433/test",
        "postgresql+psycopg2://db.example:5433/test",
        {},
    ),
    (
        PGJDBC,
        "jdbc:postgresql://[::1]:5740/accounting",
        "postgresql+psycopg2://[::1]:5740/accounting",
        {},
    ),
    (
        PGJDBC,  # "Connection Fail-over": a host list, tried in order
        "jdbc:postgresql://node1,node2:5433,node3/accounting?targetServerType=primary",
        "postgresql+psycopg2:///accounting?host=node1:5432&host=node2:5433&host=node3:5432",
        {"target_session_attrs": "primary"},
    ),
    (
        PGJDBC,
        "jdbc:postgresql://node1,node2/db?targetServerType=preferSecondary&loadBalanceHosts=true",
        "postgresql+psycopg2:///db?host=node1:5432&host=node2:5432",
        {"target_session_attrs": "prefer-standby", "load_balance_hosts": "random"},
    ),
    (
        PGJDBC,  # user, password and the connection parameters in the URL
        "jdbc:postgresql://localhost/test?user=fred&password=secret&ssl=true",
        "postgresql+psycopg2://fred:secret@localhost:5432/test",
        {"sslmode": "verify-full"},
    ),
    (
        PGJDBC_SSL,  # "ssl=true" alone verifies; sslmode says how much
        "jdbc:postgresql://localhost/test?ssl=true&sslmode=require",
        "postgresql+psycopg2://localhost:5432/test",
        {"sslmode": "require"},
    ),
    (
        PGJDBC_SSL,  # the non-validating factory: encrypted, nothing checked
        "jdbc:postgresql://localhost/test?ssl=true&sslfactory=org.postgresql.ssl.NonValidatingFactory",
        "postgresql+psycopg2://localhost:5432/test",
        {"sslmode": "require"},
    ),
    (
        PGJDBC_SSL,
        "jdbc:postgresql://h/db?sslmode=verify-ca&sslrootcert=/etc/ca.pem&sslcert=/c.pem&sslkey=/k.pk8",
        "postgresql+psycopg2://h:5432/db",
        {
            "sslmode": "verify-ca",
            "sslrootcert": "/etc/ca.pem",
            "sslcert": "/c.pem",
            "sslkey": "/k.pk8",
        },
    ),
    (
        PGJDBC,  # currentSchema: the search path, so unqualified tables are found in it
        "jdbc:postgresql://h:5432/db?currentSchema=sales&ApplicationName=etl&connectTimeout=5",
        "postgresql+psycopg2://h:5432/db",
        {"options": "-c search_path=sales", "application_name": "etl", "connect_timeout": 5},
    ),
    (
        PGJDBC,  # options come first, then currentSchema and readOnly
        "jdbc:postgresql://h/db?options=-c%20statement_timeout%3D5min&currentSchema=a,b&readOnly=true",
        "postgresql+psycopg2://h:5432/db",
        {
            "options": "-c statement_timeout=5min -c search_path=a,b "
            "-c default_transaction_read_only=on"
        },
    ),
    (
        PGJDBC,  # tcpKeepAlive, gssEncMode, the Kerberos service name: libpq's own keys
        "jdbc:postgresql://h/db?tcpKeepAlive=true&gssEncMode=disable&kerberosServerName=pg",
        "postgresql+psycopg2://h:5432/db",
        {"keepalives": 1, "gssencmode": "disable", "krbsrvname": "pg"},
    ),
    (
        CONFLUENT_SINK,  # Confluent's PostgreSQL sink example, with the recommended batching
        "jdbc:postgresql://localhost:5432/postgres?reWriteBatchedInserts=true",
        "postgresql+psycopg2://localhost:5432/postgres",
        {},
    ),
    (
        CONFLUENT_SOURCE,  # the source quickstart's URL with credentials as parameters
        "jdbc:postgresql://localhost:5432/postgres?user=postgres&password=my-secret-pw",
        "postgresql+psycopg2://postgres:my-secret-pw@localhost:5432/postgres",
        {},
    ),
    # ---- MySQL Connector/J and MariaDB Connector/J (port 3306)
    (
        CONNECTOR_J,
        "jdbc:mysql://localhost:3306/sakila",
        "mysql+pymysql://localhost:3306/sakila",
        {},
    ),
    (CONNECTOR_J, "jdbc:mysql://myhost/db", "mysql+pymysql://myhost:3306/db", {}),
    (
        CONNECTOR_J,  # user and password in the authority
        "jdbc:mysql://sandy:secret@localhost:3306/sakila",
        "mysql+pymysql://sandy:secret@localhost:3306/sakila",
        {},
    ),
    (
        CONNECTOR_J,
        "jdbc:mysql://localhost:3306/sakila?user=sandy&password=secret&sslMode=REQUIRED",
        "mysql+pymysql://sandy:secret@localhost:3306/sakila",
        {"ssl": {"check_hostname": False, "verify_mode": False}},
    ),
    (
        CONNECTOR_J_PROPS,  # the older keys, as Connector/J 8 reads them
        "jdbc:mysql://h/db?useSSL=false&allowPublicKeyRetrieval=true",
        "mysql+pymysql://h:3306/db",
        {"ssl_disabled": True},
    ),
    (
        CONNECTOR_J_PROPS,
        "jdbc:mysql://h/db?useSSL=true&verifyServerCertificate=true",
        "mysql+pymysql://h:3306/db",
        {"ssl_verify_cert": True, "ssl_verify_identity": False},
    ),
    (
        CONNECTOR_J_PROPS,
        "jdbc:mysql://h/db?sslMode=VERIFY_IDENTITY&connectTimeout=2500&socketTimeout=60000",
        "mysql+pymysql://h:3306/db",
        {
            "ssl_verify_cert": True,
            "ssl_verify_identity": True,
            "connect_timeout": 3,
            "read_timeout": 60,
            "write_timeout": 60,
        },
    ),
    (
        CONNECTOR_J_PROPS,
        "jdbc:mysql://h/db?characterEncoding=UTF-8&useUnicode=true&serverTimezone=UTC"
        "&sessionVariables=sql_mode='ANSI_QUOTES'",
        "mysql+pymysql://h:3306/db",
        {"charset": "utf8mb4", "init_command": "SET SESSION sql_mode='ANSI_QUOTES'"},
    ),
    (
        CONFLUENT_SOURCE,  # the MySQL example of Confluent's JDBC source docs
        "jdbc:mysql://127.0.0.1:3306/test?user=root&password=secret&rewriteBatchedStatements=true",
        "mysql+pymysql://root:secret@127.0.0.1:3306/test",
        {},
    ),
    (MARIADB_J, "jdbc:mariadb://localhost:3306/db", "mariadb+pymysql://localhost:3306/db", {}),
    (
        MARIADB_J,  # MariaDB's own sslMode names
        "jdbc:mariadb://localhost/db?user=u&password=p&sslMode=verify-full",
        "mariadb+pymysql://u:p@localhost:3306/db",
        {"ssl_verify_cert": True, "ssl_verify_identity": True},
    ),
    # ---- Microsoft SQL Server (pyodbc with Microsoft's ODBC Driver 18)
    (
        MSSQL,
        "jdbc:sqlserver://localhost;encrypt=true;user=MyUserName;password=pw;",
        "mssql+pyodbc://MyUserName:pw@localhost:1433?Encrypt=yes"
        "&driver=ODBC+Driver+18+for+SQL+Server",
        {},
    ),
    (
        MSSQL,
        "jdbc:sqlserver://localhost:1433;databaseName=AdventureWorks;integratedSecurity=true;"
        "encrypt=false;trustServerCertificate=true",
        "mssql+pyodbc://localhost:1433/AdventureWorks?Encrypt=no&TrustServerCertificate=yes"
        "&Trusted_Connection=yes&driver=ODBC+Driver+18+for+SQL+Server",
        {},
    ),
    (
        MSSQL,  # a named instance: no port, the browser service finds it
        "jdbc:sqlserver://localhost\\instance1;databaseName=db;user=u;password={p;w}",
        "mssql+pyodbc://u:p%3Bw@localhost\\instance1/db?driver=ODBC+Driver+18+for+SQL+Server",
        {},
    ),
    (
        MSSQL_PROPS,
        "jdbc:sqlserver://;serverName=db.example;portNumber=1444;databaseName=d;"
        "applicationName=etl;loginTimeout=20;sendStringParametersAsUnicode=false",
        "mssql+pyodbc://db.example:1444/d?APP=etl&driver=ODBC+Driver+18+for+SQL+Server",
        {"timeout": 20},
    ),
    # ---- Oracle thin driver (python-oracledb)
    (ORACLE, "jdbc:oracle:thin:@myhost:1521:orcl", "oracle+oracledb://myhost:1521/orcl", {}),
    (
        ORACLE,
        "jdbc:oracle:thin:scott/tiger@myhost:1521:orcl",
        "oracle+oracledb://scott:tiger@myhost:1521/orcl",
        {},
    ),
    (
        ORACLE,
        "jdbc:oracle:thin:@//myhost:1521/orcl.example.com",
        "oracle+oracledb://myhost:1521?service_name=orcl.example.com",
        {},
    ),
    (
        ORACLE,
        f"jdbc:oracle:thin:@{DESCRIPTOR}",
        "oracle+oracledb://",
        {"dsn": DESCRIPTOR},
    ),
    # ---- SQLite (xerial's sqlite-jdbc, Confluent's quickstart)
    (CONFLUENT_SOURCE, "jdbc:sqlite:test.db", "sqlite:///test.db", {}),
    (
        XERIAL,
        "jdbc:sqlite:/home/leo/work/mydatabase.db",
        "sqlite:////home/leo/work/mydatabase.db",
        {},
    ),
    (XERIAL, "jdbc:sqlite::memory:", "sqlite://", {}),
    (XERIAL, "jdbc:sqlite:", "sqlite://", {}),
]


@pytest.mark.parametrize(("page", "jdbc", "expected", "args"), CASES, ids=[c[1] for c in CASES])
def test_a_documented_jdbc_url_means_the_same_here(page, jdbc, expected, args):
    db = translate(jdbc)
    assert db.url == sa.make_url(expected), f"{jdbc} (from {page})"
    assert dict(db.connect_args) == args, f"{jdbc} (from {page})"


def test_parameter_values_are_decoded_as_javas_url_decoder_does():
    """%XX escapes and + for a space, in pgJDBC's and Connector/J's parameters."""
    db = translate("jdbc:postgresql://h/db?user=u&password=p%26w+x%2B")
    assert db.url.password == "p&w x+"
    db = translate("jdbc:mysql://h/db?password=a%3Db+c&connectTimeout=0")
    assert db.url.password == "a=b c"
    assert db.connect_args == {"connect_timeout": 31_536_000}  # 0: no limit, as in Java


def test_java_tuning_parameters_are_reported_not_silently_dropped():
    db = translate("jdbc:postgresql://h/db?reWriteBatchedInserts=true&prepareThreshold=0")
    assert db.ignored == ("reWriteBatchedInserts", "prepareThreshold")
    db = translate("jdbc:mysql://h/db?rewriteBatchedStatements=true&cachePrepStmts=true")
    assert db.ignored == ("rewriteBatchedStatements", "cachePrepStmts")


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("jdbc:postgresql://h/db?user=u&password=s3cret&frobnicate=1", "frobnicate"),
        ("jdbc:postgresql://h/db?currentschema=s", "currentschema"),  # pgJDBC: case matters
        ("jdbc:mysql://u:s3cret@h/db?zeroDateTimeBehavior=CONVERT_TO_NULL", "zeroDateTimeBehavior"),
        ("jdbc:mariadb://h/db?password=s3cret&tinyInt1isBit=false", "tinyInt1isBit"),
        (
            "jdbc:sqlserver://h;password=s3cret;columnEncryptionSetting=Enabled",
            "columnEncryptionSetting",
        ),
        ("jdbc:sqlite:test.db?journal_mode=WAL", "journal_mode"),
        (
            "jdbc:oracle:thin:scott/s3cret@h:1521:orcl?oracle.net.ssl_version=1.2",
            "oracle.net.ssl_version",
        ),
    ],
)
def test_an_unknown_parameter_is_refused_by_name_with_the_password_masked(url, named):
    with pytest.raises(ConfigError) as info:
        translate(url)
    message = str(info.value)
    assert info.value.name == "connection.url"
    assert named in message
    assert "s3cret" not in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("jdbc:postgresql://h/db?sslmode=sometimes", "sslmode=sometimes"),
        ("jdbc:postgresql://h/db?targetServerType=preferPrimary", "targetServerType"),
        ("jdbc:postgresql://h/db?sslfactory=com.example.MyFactory", "sslfactory"),
        ("jdbc:postgresql://h:port/db", "port"),
        ("jdbc:postgresql://h/db?connectTimeout=soon", "connectTimeout"),
        ("jdbc:mysql://h1,h2/db", "2 hosts"),
        ("jdbc:mysql:loadbalance://h1,h2/db", "load-balanced"),
        ("jdbc:mysql://h/db?serverTimezone=Europe/Paris", "db.timezone=Europe/Paris"),
        ("jdbc:mysql://h/db?sslMode=SOMETIMES", "sslMode"),
        ("jdbc:db2://h:50000/db", "db2"),
        ("jdbc:sqlite:file:test.db", "file:"),
        ("not a url at all", "not a database URL"),
        ("", "a database URL is needed"),
    ],
)
def test_a_url_that_means_nothing_here_says_why_in_one_line(url, reason):
    with pytest.raises(ConfigError) as info:
        translate(url)
    assert info.value.name == "connection.url"
    assert reason in str(info.value)
    assert "\n" not in str(info.value)


def test_connection_user_and_password_win_over_the_urls():
    db = translate("jdbc:postgresql://h/db?user=a&password=old", user="etl", password="new-secret")
    assert (db.url.username, db.url.password) == ("etl", "new-secret")
    assert str(db) == "postgresql+psycopg2://etl:[hidden]@h:5432/db"
    db = translate("postgresql://a:old@h/db", user="etl", password="pw")
    assert (db.url.username, db.url.password) == ("etl", "pw")
    db = translate("jdbc:mysql://h/db", user="etl")
    assert (db.url.username, db.url.password) == ("etl", None)


def test_a_sqlalchemy_url_is_taken_as_it_is():
    for url in (
        "postgresql+psycopg2://u:p@h:5/db",
        "sqlite:///x.db",
        "mysql://u@h/db?charset=utf8mb4",
    ):
        db = translate(url)
        assert db.url == sa.make_url(url)
        assert db.connect_args == {}


@pytest.mark.parametrize(
    "url",
    [
        "jdbc:postgresql://h/db?user=u&password=hunter22&ssl=true",
        "jdbc:postgresql://h/db?sslpassword=hunter22",
        "jdbc:mysql://u:hunter22@h/db",
        "jdbc:mysql://u:hunter22@@h/db",
        "jdbc:postgresql://h:5432?user=u&password=x@hunter22",
        "jdbc:sqlserver://h;user=u;password={hunter22;x};encrypt=true",
        "jdbc:sqlserver://h;user=u;PASSWORD=hunter22",
        "jdbc:oracle:thin:scott/hunter22@h:1521:orcl",
        "postgresql://u:hunter22@h/db",
    ],
)
def test_every_password_is_masked(url):
    masked = mask_url(url)
    assert "hunter22" not in masked
    assert "[hidden]" in masked


def test_a_password_given_beside_the_url_is_masked_wherever_it_appears():
    assert mask_url("jdbc:mysql://h/hunter22", "hunter22") == "jdbc:mysql://h/[hidden]"


def test_libpq_params_of_any_postgresql_url():
    """What PostgresCdcSource hands psycopg2, whatever driver the URL names."""
    expected = {"host": "h", "port": 5, "user": "u", "password": "p", "dbname": "db"}
    for url in (
        "postgresql://u:p@h:5/db",
        "postgresql+psycopg://u:p@h:5/db",
        "postgresql+psycopg2://u:p@h:5/db",
        "jdbc:postgresql://h:5/db?user=u&password=p",
    ):
        assert libpq_params(translate(url)) == expected, url
    several = libpq_params(translate("jdbc:postgresql://a:1,b/db?currentSchema=s&sslmode=require"))
    assert several == {
        "host": "a,b",
        "port": "1,5432",
        "dbname": "db",
        "sslmode": "require",
        "options": "-c search_path=s",
    }
    assert libpq_params(translate("postgresql://h/db?sslmode=require"))["sslmode"] == "require"


def test_a_url_without_a_driver_gets_one_that_is_installed():
    assert resolve_driver(translate("mysql://u@h/db")).url.drivername == "mysql+pymysql"
    assert resolve_driver(translate("mariadb://u@h/db")).url.drivername == "mariadb+pymysql"
    # psycopg2, whose COPY the sink's fast path uses; postgresql+psycopg:// is psycopg 3
    assert resolve_driver(translate("postgresql://u@h/db")).url.drivername == "postgresql+psycopg2"
    named = resolve_driver(translate("postgresql+psycopg://u@h/db"))
    assert named.url.drivername == "postgresql+psycopg"
    assert resolve_driver(translate("sqlite:///x.db")).url.drivername == "sqlite"


@pytest.mark.parametrize(
    ("url", "package"),
    [
        ("jdbc:sqlserver://h;user=u;password=s3cret", "pip install 'pyodbc"),
        ("mssql+pymssql://u:s3cret@h/db", "pip install 'pymssql'"),
        ("jdbc:oracle:thin:u/s3cret@h:1521:orcl", "pip install 'oracledb'"),
        ("mysql+mysqldb://u:s3cret@h/db", "pip install 'mysqlclient'"),
    ],
)
def test_a_driver_that_is_missing_names_the_package_to_install(url, package):
    with pytest.raises(ConfigError) as info:
        database_url(url)
    message = str(info.value)
    assert package in message
    assert "s3cret" not in message
    assert info.value.name == "connection.url"


@pytest.mark.parametrize("definition", [SOURCE_CONFIG, SINK_CONFIG], ids=["source", "sink"])
def test_the_connectors_validate_the_url_when_the_config_is(definition):
    good = {v.name: v for v in definition.validate({"connection.url": "jdbc:sqlite:x.db"})}
    assert good["connection.url"].errors == []
    bad = {
        v.name: v
        for v in definition.validate(
            {"connection.url": "jdbc:postgresql://h/db?password=s3cret&bogus=1"}
        )
    }
    errors = bad["connection.url"].errors
    assert len(errors) == 1
    assert "bogus" in errors[0]
    assert "s3cret" not in errors[0]
    # a config-provider placeholder is resolved only when the task starts
    later = {
        v.name: v
        for v in definition.validate({"connection.url": "${file:/run/secrets/db.properties:url}"})
    }
    assert later["connection.url"].errors == []
