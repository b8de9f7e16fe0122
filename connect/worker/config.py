"""Worker configuration: Kafka Connect's keys, declared once, and the unknown-key
warnings of worker and connector configs alike.

Worker keys that Kafka Connect knows keep their names and meanings; `log.dir` (the
embedded log's directory) is ours. The keys every connector config has are in
`connect.worker.connector_config`. Unknown keys are ignored as Kafka ignores them, and
warned about by name as Kafka warns ("The configuration 'x' was supplied but isn't a
known config"), with the known key a likely misspelling resembles (`unknown_keys`).
Keys under a pass-through prefix are someone else's and never warned about: a
converter's (`value.converter.schemas.enable`), a client's (`producer.`, `consumer.`),
a config provider's; in a connector config also a transform's, a predicate's, the
error handling's and a client override's (`consumer.override.`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from connect.api import ConfigDef, ConfigType, Importance, at_least, non_empty_string, one_of

__all__ = [
    "CONNECTOR_PASS_THROUGH",
    "WORKER_CONFIG",
    "WORKER_PASS_THROUGH",
    "unknown_key_warnings",
    "unknown_keys",
]

JSON = "org.apache.kafka.connect.json.JsonConverter"

WORKER_CONFIG = (
    ConfigDef()
    .define(
        "log.dir",
        ConfigType.STRING,
        None,
        non_empty_string,
        Importance.HIGH,
        "Directory of the embedded log (required unless bootstrap.servers is set).",
    )
    .define(
        "bootstrap.servers",
        ConfigType.LIST,
        "",
        None,
        Importance.HIGH,
        "Apache Kafka brokers, when the log is a Kafka cluster.",
    )
    .define(
        "key.converter", ConfigType.CLASS, JSON, None, Importance.HIGH, "Converter for record keys."
    )
    .define(
        "value.converter",
        ConfigType.CLASS,
        JSON,
        None,
        Importance.HIGH,
        "Converter for record values.",
    )
    .define(
        "header.converter",
        ConfigType.CLASS,
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        None,
        Importance.LOW,
        "Converter for header values.",
    )
    .define(
        "offset.flush.interval.ms",
        ConfigType.LONG,
        60_000,
        at_least(0),
        Importance.LOW,
        "How often source offsets and sink consumer offsets are committed.",
    )
    .define(
        "offset.flush.timeout.ms",
        ConfigType.LONG,
        5_000,
        at_least(0),
        Importance.LOW,
        "How long an offset flush may take before it is abandoned for this round.",
    )
    .define(
        "task.shutdown.graceful.timeout.ms",
        ConfigType.LONG,
        5_000,
        at_least(0),
        Importance.LOW,
        "How long to wait for tasks to stop cleanly.",
    )
    .define(
        "task.isolation",
        ConfigType.STRING,
        "process",
        one_of("process", "thread"),
        Importance.MEDIUM,
        "Where tasks run: 'process' gives each task a child process of its own, so tasks "
        "use as many cores as the machine has (Python threads share one); 'thread' runs "
        "them as threads of the worker (in-process plugins, fewer processes). Process "
        "isolation needs the embedded log (log.dir); with bootstrap.servers tasks run as "
        "threads.",
    )
    .define(
        "listeners",
        ConfigType.LIST,
        "http://127.0.0.1:8083",
        None,
        Importance.LOW,
        "REST listeners, e.g. http://127.0.0.1:8083; nothing listens beyond loopback "
        "unless configured.",
    )
    .define("rest.host.name", ConfigType.STRING, None, None, Importance.LOW, "Deprecated.")
    .define("rest.port", ConfigType.INT, None, None, Importance.LOW, "Deprecated.")
    .define(
        "rest.basic.auth.users.file",
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "File of user:password lines; when set, the REST API requires HTTP basic auth.",
    )
    .define(
        "config.providers",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Names of config providers (config.providers.<name>.class, .param.*).",
    )
    .define(
        "plugin.path",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Accepted for compatibility; plugins are Python packages (entry points).",
    )
    .define(
        "topic.tracking.enable",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Track the topics each connector uses (GET /connectors/{name}/topics).",
    )
    .define(
        "topic.tracking.allow.reset",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Allow PUT /connectors/{name}/topics/reset.",
    )
    .define(
        "topic.creation.enable",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Let source connectors create their topics (topic.creation.* settings).",
    )
    .define(
        "num.partitions",
        ConfigType.INT,
        1,
        at_least(1),
        Importance.LOW,
        "Partitions of a topic the worker creates on first write without other settings.",
    )
    .define(
        "offset.storage.topic",
        ConfigType.STRING,
        "connect-offsets",
        non_empty_string,
        Importance.LOW,
        "Topic of source offsets.",
    )
    .define("offset.storage.partitions", ConfigType.INT, 25, at_least(1), Importance.LOW, "")
    .define(
        "config.storage.topic",
        ConfigType.STRING,
        "connect-configs",
        non_empty_string,
        Importance.LOW,
        "Topic of connector configs and target states.",
    )
    .define(
        "status.storage.topic",
        ConfigType.STRING,
        "connect-status",
        non_empty_string,
        Importance.LOW,
        "Topic of connector and task statuses.",
    )
    .define("status.storage.partitions", ConfigType.INT, 5, at_least(1), Importance.LOW, "")
    .define(
        "group.id",
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Cluster id of distributed workers.",
    )
    .define(
        "exactly.once.source.support",
        ConfigType.STRING,
        "disabled",
        one_of("disabled", "preparing", "enabled"),
        Importance.HIGH,
        "Exactly-once source support (KIP-618): 'enabled' writes each source task's "
        "records and its source offsets in one log transaction, fences a task's "
        "previous generation before the new one starts, and has sinks read committed "
        "records only; 'preparing' (Kafka's first step of a rolling upgrade to "
        "'enabled') runs source tasks without transactions but does the rest: it runs "
        "fencing rounds for 'enabled' workers, fences a source connector's tasks before "
        "its offsets are altered or reset, and its sinks read committed records. "
        "Standalone workers support it too (the embedded log has transactions).",
    )
    .define(
        "group.storage.topic",
        ConfigType.STRING,
        "connect-group",
        non_empty_string,
        Importance.LOW,
        "Distributed mode: the one-partition topic of membership and assignments "
        "(docs/distributed.md).",
    )
    .define(
        "session.timeout.ms",
        ConfigType.INT,
        10_000,
        at_least(1),
        Importance.HIGH,
        "Distributed mode: a worker not heard from for this long is declared dead and its "
        "work moves; a worker that has not read back its own heartbeat for this long stops "
        "writing (it may have been declared dead).",
    )
    .define(
        "heartbeat.interval.ms",
        ConfigType.INT,
        3_000,
        at_least(1),
        Importance.HIGH,
        "Distributed mode: how often a worker heartbeats (well below session.timeout.ms).",
    )
    .define(
        "rebalance.timeout.ms",
        ConfigType.INT,
        60_000,
        at_least(1),
        Importance.MEDIUM,
        "Distributed mode: how long a worker may take to stop the work a rebalance took "
        "from it before it is declared dead.",
    )
    .define(
        "scheduled.rebalance.max.delay.ms",
        ConfigType.INT,
        300_000,
        at_least(0),
        Importance.MEDIUM,
        "Distributed mode: how long a departed worker's work waits for it to come back "
        "(counted from its last heartbeat) before it is spread over the others.",
    )
    .define(
        "rest.advertised.host.name",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Distributed mode: the host other workers and clients reach this worker at.",
    )
    .define(
        "rest.advertised.port",
        ConfigType.INT,
        None,
        None,
        Importance.LOW,
        "Distributed mode: the port other workers and clients reach this worker at.",
    )
    .define(
        "rest.advertised.listener",
        ConfigType.STRING,
        "http",
        one_of("http", "https"),
        Importance.LOW,
        "Distributed mode: the scheme of the advertised URL.",
    )
    .define(
        "worker.id",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "This worker's id in statuses (default: host:port of its REST listener).",
    )
    .define(
        "schema.registry.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Run the embedded schema registry (Confluent's REST API, state in the log's "
        "schema.registry.topic) inside this worker.",
    )
    .define(
        "schema.registry.listeners",
        ConfigType.LIST,
        "http://127.0.0.1:8081",
        None,
        Importance.LOW,
        "Where the embedded schema registry listens (only http; the first is served); "
        "nothing listens beyond loopback unless configured.",
    )
    .define(
        "schema.registry.basic.auth.users.file",
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "File of user:password lines; when set, the schema registry requires HTTP basic "
        "auth.",
    )
    .define(
        "schema.registry.topic",
        ConfigType.STRING,
        "_schemas",
        non_empty_string,
        Importance.LOW,
        "Compacted topic of the registry's state (Confluent's kafkastore.topic).",
    )
    .define(
        "schema.registry.compatibility.level",
        ConfigType.STRING,
        "BACKWARD",
        one_of(
            "NONE",
            "BACKWARD",
            "BACKWARD_TRANSITIVE",
            "FORWARD",
            "FORWARD_TRANSITIVE",
            "FULL",
            "FULL_TRANSITIVE",
        ),
        Importance.LOW,
        "Compatibility level of subjects without their own, until PUT /config sets one "
        "(Confluent's schema.compatibility.level).",
    )
)

#: Worker-config prefixes whose keys belong to others: converters' settings, the Kafka
#: clients' (Kafka Connect's producer./consumer./admin., librdkafka's kafka.), and
#: config providers' (config.providers.<name>.class / .param.*).
WORKER_PASS_THROUGH = (
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "producer.",
    "consumer.",
    "admin.",
    "kafka.",
    "config.providers.",
)

#: Connector-config prefixes whose keys belong to others: converters, transforms and
#: predicates (their keys depend on the class each alias names), error handling, the
#: clients' overrides, topic creation groups and config providers.
CONNECTOR_PASS_THROUGH = (
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "transforms.",
    "predicates.",
    "errors.",
    "consumer.override.",
    "producer.override.",
    "admin.override.",
    "topic.creation.",
    "config.providers.",
)


def unknown_keys(
    supplied: Iterable[str], known: Iterable[str], pass_through: Iterable[str] = ()
) -> list[tuple[str, str | None]]:
    """(key, the known key it most resembles or None) for every supplied key that is
    neither known nor under a pass-through prefix, sorted. The resemblance is
    difflib's ratio at 0.75 or more: a dropped unit (`offset.flush.interval`), a
    missing letter (`tasks.mx`), two swapped (`fiel`). A known name ending in `.*`
    declares a family of keys (IcebergSink's `iceberg.catalog.*`, handed to the
    library as they are): every key under that prefix is known."""
    known = sorted(set(known))
    prefixes = tuple(pass_through) + tuple(k[:-1] for k in known if k.endswith(".*"))
    out = []
    for key in sorted(set(supplied) - set(known)):
        if key.startswith(prefixes):
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
        out.append((key, close[0] if close else None))
    return out


def unknown_key_warnings(
    supplied: Mapping[str, object],
    known: Iterable[str],
    pass_through: Iterable[str] = (),
    *,
    where: str,
) -> list[str]:
    """One line per unknown key of `supplied` (see `unknown_keys`), saying `where` it
    was found, that it is ignored, and what it may have meant."""
    lines = []
    for key, close in unknown_keys(supplied, known, pass_through):
        line = f"{where}: the configuration '{key}' was supplied but isn't a known config"
        lines.append(line + (f" (ignored); did you mean '{close}'?" if close else " (ignored)"))
    return lines
