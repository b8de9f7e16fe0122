"""The scripted sequence of REST calls that tests/conformance/test_differential_rest.py
drives at a real Kafka Connect and at Tributary: the two sides (`Side`), the connector
configs both run, the states a step waits for (`Wait`), and the steps (`SCRIPT`).

A step's `path` names the side's connectors `{src}` (a FileStreamSource), `{snk}` (a
FileStreamSink reading the source's topic), `{bad}` (a sink whose task fails at start:
its file's directory does not exist), `{init}` (created STOPPED) and `{missing}` (never
created); each side puts
its own prefix before the name (`k-src`, `t-src`), and before its topic, because the
two workers share a broker and a sink's consumer group is `connect-<name>` on both.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import httpx

from tests.conformance.differential import Answer
from tests.integration.conftest import STRING
from tests.waiting import wait_until

__all__ = ["SCRIPT", "Side", "Step", "Wait", "reach"]

WAIT_S = 60.0


# ------------------------------------------------------------------ the two sides


@dataclass
class Side:
    """One worker: its REST client, the prefix of its connectors' and topics' names,
    and the directory of its connectors' files."""

    label: str
    prefix: str
    client: httpx.Client
    directory: Path

    def name(self, role: str) -> str:
        return f"{self.prefix}-{role}"

    @property
    def topic(self) -> str:
        return f"{self.prefix}-lines"

    def send(self, step: Step) -> Answer:
        roles = ("src", "snk", "bad", "init", "missing")
        path = step.path.format(**{r: self.name(r) for r in roles})
        headers = {"Content-Type": step.content_type}
        content = step.raw
        if content is None and step.body is not None:
            body = step.body(self) if callable(step.body) else step.body
            content = json.dumps(body).encode()
        if content is None:
            headers = {}
        try:
            response = self.client.request(step.method, path, content=content, headers=headers)
        except httpx.TransportError as e:
            raise AssertionError(f"{self.label}, step {step.id}: {e!r}") from e
        return Answer.of(response.status_code, response.content)

    def state(self, role: str) -> tuple[str, tuple[str, ...]] | None:
        response = self.client.get(f"/connectors/{self.name(role)}/status")
        if response.status_code != 200:
            return None  # Kafka: 404 until the connector's owner wrote a first state
        body = response.json()
        return body["connector"]["state"], tuple(t["state"] for t in body["tasks"])


CONVERTERS = {"key.converter": STRING, "value.converter": STRING}


def source(side: Side) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": str(side.directory / "in.txt"),
        "topic": side.topic,
        **CONVERTERS,
    }


def sink(side: Side, file: str = "out.txt") -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "tasks.max": "1",
        "file": str(side.directory / file),
        "topics": side.topic,
        **CONVERTERS,
    }


def validated(**changes: str | None) -> Callable[[Side], dict[str, str]]:
    """A body for validate: the source's config named `<prefix>-v`, with `changes`
    (None removes a key)."""

    def body(side: Side) -> dict[str, str]:
        config = {**source(side), "name": side.name("v"), **changes}
        return {k: v for k, v in config.items() if v is not None}

    return body


# ------------------------------------------------------------------ the script


class Wait(NamedTuple):
    """A condition each side must reach (with a deadline) before the script goes on."""

    what: str
    reached: Callable[[Side], bool]


def state(role: str, connector: str, *tasks: str, any_tasks: bool = False) -> Wait:
    def reached(side: Side) -> bool:
        now = side.state(role)
        return now is not None and now[0] == connector and (any_tasks or now[1] == tasks)

    return Wait(f"{role} {connector} {list(tasks)}", reached)


def offsets(role: str) -> Wait:
    def reached(side: Side) -> bool:
        response = side.client.get(f"/connectors/{side.name(role)}/offsets")
        return response.status_code == 200 and bool(response.json()["offsets"])

    return Wait(f"{role} has committed offsets", reached)


def gone(role: str) -> Wait:
    def reached(side: Side) -> bool:
        listed = side.client.get("/connectors").json()
        return side.client.get(f"/connectors/{side.name(role)}").status_code == 404 and (
            side.name(role) not in listed
        )

    return Wait(f"{role} deleted", reached)


@dataclass(frozen=True)
class Step:
    """One call. `path` names the side's connectors `{src}`, `{snk}`, `{bad}`, `{init}` and
    `{missing}` (never created); `body` is JSON or made per side; `raw` is sent as it
    is. `before`/`then`: states both sides reach before and after the call. `maps`:
    paths of objects keyed by data (see differential.shape); `states`: compare `state`
    values too (after a settled state only)."""

    id: str
    method: str
    path: str
    body: Any = None
    raw: bytes | None = None
    content_type: str = "application/json"
    before: Wait | None = None
    then: Wait | None = None
    maps: tuple[str, ...] = ()
    states: bool = False


def get(id_: str, path: str, **kw: Any) -> Step:
    return Step(id_, "GET", path, **kw)


VALIDATE = "/connector-plugins/FileStreamSourceConnector/config/validate"
RUNNING = state("src", "RUNNING", "RUNNING")
SINK_RUNNING = state("snk", "RUNNING", "RUNNING")
LOGGER = "/admin/loggers/org.example.tributary.differential"


def _source_offsets(position: Any) -> Callable[[Side], dict[str, Any]]:
    def body(side: Side) -> dict[str, Any]:
        partition = {"filename": str(side.directory / "in.txt")}
        return {"offsets": [{"partition": partition, "offset": {"position": position}}]}

    return body


def _sink_offsets(partition: dict[str, Any]) -> Callable[[Side], dict[str, Any]]:
    def body(side: Side) -> dict[str, Any]:
        where = {k: side.topic if v == "{topic}" else v for k, v in partition.items()}
        return {"offsets": [{"partition": where, "offset": {"kafka_offset": 1}}]}

    return body


SCRIPT: tuple[Step, ...] = (
    # ---- the worker and its plugins
    get("root", "/"),
    get("health", "/health"),
    get("plugins", "/connector-plugins"),
    get("plugins-every-kind", "/connector-plugins?connectorsOnly=false"),
    get("plugins-bad-flag", "/connector-plugins?connectorsOnly=maybe"),
    get("plugin-config", "/connector-plugins/FileStreamSourceConnector/config"),
    get("plugin-config-unknown-plugin", "/connector-plugins/NoSuchConnector/config"),
    Step("validate-good", "PUT", VALIDATE, validated()),
    Step("validate-missing-required", "PUT", VALIDATE, validated(topic=None)),
    Step("validate-bad-value", "PUT", VALIDATE, validated(**{"tasks.max": "abc"})),
    Step(
        "validate-class-mismatch",
        "PUT",
        VALIDATE,
        validated(**{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector"}),
    ),
    Step(
        "validate-unknown-plugin",
        "PUT",
        "/connector-plugins/NoSuchConnector/config/validate",
        validated(**{"connector.class": "NoSuchConnector"}),
    ),
    Step("validate-without-class", "PUT", VALIDATE, validated(**{"connector.class": None})),
    Step("validate-malformed-json", "PUT", VALIDATE, raw=b"{bad"),
    Step(
        "validate-text-plain",
        "PUT",
        VALIDATE,
        raw=b'{"connector.class": "FileStreamSource", "topic": "t", "name": "v"}',
        content_type="text/plain",
    ),
    # ---- create, and each way to get a create wrong
    Step(
        "create",
        "POST",
        "/connectors",
        lambda s: {"name": s.name("src"), "config": source(s)},
        then=RUNNING,
    ),
    Step(
        "create-duplicate",
        "POST",
        "/connectors",
        lambda s: {"name": s.name("src"), "config": source(s)},
    ),
    Step("create-malformed-json", "POST", "/connectors", raw=b"{bad"),
    Step("create-empty-body", "POST", "/connectors", raw=b""),
    Step("create-array-body", "POST", "/connectors", raw=b"[1, 2]"),
    Step("create-without-config", "POST", "/connectors", lambda s: {"name": s.name("x")}),
    Step("create-without-name", "POST", "/connectors", lambda s: {"config": source(s)}),
    Step("create-empty-name", "POST", "/connectors", lambda s: {"name": "", "config": source(s)}),
    Step(
        "create-unknown-plugin",
        "POST",
        "/connectors",
        lambda s: {"name": s.name("x"), "config": {**source(s), "connector.class": "x.Nope"}},
    ),
    Step(
        "create-bad-value",
        "POST",
        "/connectors",
        lambda s: {"name": s.name("x"), "config": {**source(s), "tasks.max": "abc"}},
    ),
    Step(
        "create-missing-required",
        "POST",
        "/connectors",
        lambda s: {"name": s.name("x"), "config": validated(topic=None, name=None)(s)},
    ),
    Step("put-config-create", "PUT", "/connectors/{snk}/config", sink, then=SINK_RUNNING),
    Step(
        "put-config-name-mismatch",
        "PUT",
        "/connectors/{snk}/config",
        lambda s: {**sink(s), "name": "other"},
    ),
    Step("put-config-malformed-json", "PUT", "/connectors/{snk}/config", raw=b"{bad"),
    # ---- reads of a running connector
    get("get-connector", "/connectors/{src}"),
    get("get-config", "/connectors/{src}/config"),
    get("get-tasks", "/connectors/{src}/tasks"),
    get("get-tasks-config", "/connectors/{src}/tasks-config"),
    get("list", "/connectors"),
    get("list-expand-status", "/connectors?expand=status", maps=("$",), states=True),
    get("list-expand-info", "/connectors?expand=info", maps=("$",)),
    get("list-expand-both", "/connectors?expand=status&expand=info", maps=("$",), states=True),
    get("list-expand-bogus", "/connectors?expand=bogus", maps=("$",)),
    get("status", "/connectors/{src}/status", states=True),
    get("task-status", "/connectors/{src}/tasks/0/status", states=True),
    get("task-status-unknown-task", "/connectors/{src}/tasks/7/status"),
    get("task-status-not-a-number", "/connectors/{src}/tasks/x/status"),
    get("offsets-running", "/connectors/{src}/offsets", before=offsets("src")),
    get("topics", "/connectors/{src}/topics", maps=("$",)),
    Step("topics-reset-running", "PUT", "/connectors/{src}/topics/reset"),
    get("sink-offsets-running", "/connectors/{snk}/offsets", before=offsets("snk")),
    Step("alter-offsets-running", "PATCH", "/connectors/{src}/offsets", _source_offsets(2)),
    Step("reset-offsets-running", "DELETE", "/connectors/{src}/offsets"),
    # ---- restarts (those that restart nothing first: their plans are exact)
    Step("restart-only-failed", "POST", "/connectors/{src}/restart?onlyFailed=true", states=True),
    Step(
        "restart-only-failed-with-tasks",
        "POST",
        "/connectors/{src}/restart?includeTasks=true&onlyFailed=true",
        states=True,
    ),
    Step("restart-bad-flag", "POST", "/connectors/{src}/restart?includeTasks=maybe", then=RUNNING),
    Step("restart", "POST", "/connectors/{src}/restart", then=RUNNING),
    Step(
        "restart-with-tasks",
        "POST",
        "/connectors/{src}/restart?includeTasks=true",
        then=RUNNING,
        states=True,
    ),
    Step("task-restart", "POST", "/connectors/{src}/tasks/0/restart", then=RUNNING),
    Step("task-restart-unknown-task", "POST", "/connectors/{src}/tasks/5/restart"),
    # ---- a task that fails at start (its file's directory does not exist)
    Step(
        "create-failing-sink",
        "PUT",
        "/connectors/{bad}/config",
        lambda s: sink(s, "missing/out.txt"),
        then=state("bad", "RUNNING", "FAILED"),
    ),
    get("status-failed", "/connectors/{bad}/status", states=True),
    get("task-status-failed", "/connectors/{bad}/tasks/0/status", states=True),
    Step(
        "restart-failed-only-failed",
        "POST",
        "/connectors/{bad}/restart?onlyFailed=true",
        states=True,
    ),
    Step(
        "restart-failed-with-tasks",
        "POST",
        "/connectors/{bad}/restart?includeTasks=true&onlyFailed=true",
        states=True,
    ),
    Step("delete-failing-sink", "DELETE", "/connectors/{bad}", then=gone("bad")),
    # ---- pause, resume, a config change, stop
    Step("pause", "PUT", "/connectors/{src}/pause", then=state("src", "PAUSED", "PAUSED")),
    get("status-paused", "/connectors/{src}/status", states=True),
    Step("pause-again", "PUT", "/connectors/{src}/pause"),
    Step("resume", "PUT", "/connectors/{src}/resume", then=RUNNING),
    Step("patch-config", "PATCH", "/connectors/{src}/config", {"batch.size": "100"}),
    Step("update-sink-config", "PUT", "/connectors/{snk}/config", lambda s: sink(s, "out2.txt")),
    Step("stop", "PUT", "/connectors/{src}/stop", then=state("src", "STOPPED")),
    get("status-stopped", "/connectors/{src}/status", states=True),
    get("get-connector-stopped", "/connectors/{src}"),
    get("get-tasks-stopped", "/connectors/{src}/tasks"),
    get("task-status-stopped", "/connectors/{src}/tasks/0/status"),
    Step("restart-stopped", "POST", "/connectors/{src}/restart"),
    Step(
        "restart-stopped-with-tasks",
        "POST",
        "/connectors/{src}/restart?includeTasks=true",
        states=True,
    ),
    # ---- offsets of a stopped source
    get("offsets-stopped", "/connectors/{src}/offsets"),
    Step("alter-offsets", "PATCH", "/connectors/{src}/offsets", _source_offsets(2)),
    get("offsets-altered", "/connectors/{src}/offsets"),
    Step("alter-offsets-bad-value", "PATCH", "/connectors/{src}/offsets", _source_offsets("x")),
    Step("alter-offsets-empty-list", "PATCH", "/connectors/{src}/offsets", {"offsets": []}),
    Step("alter-offsets-no-offsets", "PATCH", "/connectors/{src}/offsets", {}),
    Step("reset-offsets", "DELETE", "/connectors/{src}/offsets"),
    get("offsets-reset", "/connectors/{src}/offsets"),
    # ---- a stopped connector paused, then resumed
    Step(
        "pause-stopped",
        "PUT",
        "/connectors/{src}/pause",
        then=state("src", "PAUSED", any_tasks=True),
    ),
    get("status-paused-from-stopped", "/connectors/{src}/status", states=True),
    Step("resume-paused-from-stopped", "PUT", "/connectors/{src}/resume", then=RUNNING),
    # ---- offsets of a stopped sink
    Step("stop-sink", "PUT", "/connectors/{snk}/stop", then=state("snk", "STOPPED")),
    get("sink-offsets-stopped", "/connectors/{snk}/offsets"),
    Step(
        "alter-sink-offsets",
        "PATCH",
        "/connectors/{snk}/offsets",
        _sink_offsets({"kafka_topic": "{topic}", "kafka_partition": 0}),
    ),
    get("sink-offsets-altered", "/connectors/{snk}/offsets"),
    Step(
        "alter-sink-offsets-unknown-topic",
        "PATCH",
        "/connectors/{snk}/offsets",
        _sink_offsets({"kafka_topic": "no-such-topic", "kafka_partition": 0}),
    ),
    Step(
        "alter-sink-offsets-no-partition",
        "PATCH",
        "/connectors/{snk}/offsets",
        _sink_offsets({"kafka_topic": "{topic}"}),
    ),
    Step("reset-sink-offsets", "DELETE", "/connectors/{snk}/offsets"),
    Step("reset-sink-offsets-again", "DELETE", "/connectors/{snk}/offsets"),
    get("sink-offsets-reset", "/connectors/{snk}/offsets"),
    # ---- loggers
    get("loggers", "/admin/loggers", maps=("$",)),
    get("logger-root", "/admin/loggers/root"),
    get("logger-unknown", "/admin/loggers/org.example.tributary.never.set"),
    Step("logger-set", "PUT", LOGGER, {"level": "DEBUG"}),
    Step("logger-set-same-level", "PUT", LOGGER, {"level": "DEBUG"}),
    get("logger-get", LOGGER),
    Step("logger-set-bad-level", "PUT", LOGGER, {"level": "LOUD"}),
    Step("logger-set-no-level", "PUT", LOGGER, {"lvl": "DEBUG"}),
    Step("logger-set-malformed-json", "PUT", LOGGER, raw=b"{bad"),
    Step("logger-set-unknown-scope", "PUT", LOGGER + "?scope=galaxy", {"level": "WARN"}),
    Step("logger-set-cluster-scope", "PUT", LOGGER + "?scope=cluster", {"level": "INFO"}),
    # ---- a connector that does not exist
    get("unknown-get", "/connectors/{missing}"),
    get("unknown-config", "/connectors/{missing}/config"),
    get("unknown-status", "/connectors/{missing}/status"),
    get("unknown-tasks", "/connectors/{missing}/tasks"),
    get("unknown-task-status", "/connectors/{missing}/tasks/0/status"),
    get("unknown-offsets", "/connectors/{missing}/offsets"),
    Step("unknown-pause", "PUT", "/connectors/{missing}/pause"),
    Step("unknown-resume", "PUT", "/connectors/{missing}/resume"),
    Step("unknown-stop", "PUT", "/connectors/{missing}/stop"),
    Step("unknown-restart", "POST", "/connectors/{missing}/restart"),
    Step("unknown-task-restart", "POST", "/connectors/{missing}/tasks/0/restart"),
    Step("unknown-patch-config", "PATCH", "/connectors/{missing}/config", {"a": "b"}),
    Step("unknown-alter-offsets", "PATCH", "/connectors/{missing}/offsets", _source_offsets(1)),
    Step("unknown-reset-offsets", "DELETE", "/connectors/{missing}/offsets"),
    Step("unknown-delete", "DELETE", "/connectors/{missing}"),
    # ---- wrong methods, unknown paths
    Step("method-delete-collection", "DELETE", "/connectors"),
    Step("method-patch-connector", "PATCH", "/connectors/{src}", {"a": "b"}),
    Step("method-post-pause", "POST", "/connectors/{src}/pause"),
    Step("method-post-offsets", "POST", "/connectors/{src}/offsets", {"offsets": []}),
    get("method-get-restart", "/connectors/{src}/restart"),
    Step("method-put-loggers", "PUT", "/admin/loggers", {"level": "INFO"}),
    get("unknown-path", "/no/such/path"),
    get("unknown-subpath", "/connectors/{src}/nothing-here"),
    # ---- deletes
    # ---- a connector created STOPPED
    Step(
        "create-stopped",
        "POST",
        "/connectors",
        lambda s: {"name": s.name("init"), "config": source(s), "initial_state": "STOPPED"},
        then=state("init", "STOPPED"),
    ),
    get("status-created-stopped", "/connectors/{init}/status", states=True),
    Step(
        "create-bad-initial-state",
        "POST",
        "/connectors",
        lambda s: {"name": s.name("x"), "config": source(s), "initial_state": "ASLEEP"},
    ),
    Step("delete-created-stopped", "DELETE", "/connectors/{init}", then=gone("init")),
    Step("delete-sink", "DELETE", "/connectors/{snk}", then=gone("snk")),
    Step("delete-sink-again", "DELETE", "/connectors/{snk}"),
    Step("delete", "DELETE", "/connectors/{src}", then=gone("src")),
    get("get-deleted", "/connectors/{src}"),
    get("list-empty", "/connectors"),
)


def reach(wait: Wait, sides: list[Side]) -> str | None:
    """None once every side reached `wait`; else what one side did not reach in time."""
    for side in sides:
        try:
            wait_until(lambda s=side: wait.reached(s), WAIT_S, f"{side.label}: {wait.what}")
        except AssertionError as exc:
            return str(exc)
    return None
