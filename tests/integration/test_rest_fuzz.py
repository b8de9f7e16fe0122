"""Fuzzing a real worker's REST API from its own OpenAPI description (schemathesis):
whatever a client sends, the worker answers with a status below 500, and no error
body carries a traceback, a Python frame or a server file path.

Two passes, both bounded in examples and time: every operation fuzzed on its own
(bodies, paths, queries, headers made from the schema, valid and not), and stateful
sequences that follow the links schemathesis infers (a connector created, then read,
paused, stopped, its offsets altered, deleted…).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests.conftest import ROOT
from tests.integration.conftest import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: What a leaked traceback, frame or server path looks like in a response body (the
#: project's own directory or an installed package's; fuzzed input never holds them).
_LEAK = re.compile(
    r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|site-packages|"
    + re.escape(str(ROOT))
)

_SETTINGS = dict(
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


def _problems(case: Any, response: Any) -> list[str]:
    out = []
    where = f"{case.method} {case.formatted_path}"
    if response.status_code >= 500:
        out.append(f"{where} answered {response.status_code}: {response.text[:300]}")
    # Error bodies only: a FAILED task's status carries its trace by design (Kafka's
    # `trace` field), and a fuzzed config may well fail a task.
    if response.status_code >= 400 and _LEAK.search(response.text or ""):
        out.append(f"{where} leaked: {response.text[:300]}")
    return out


#: Connectors the worker runs before fuzzing, so that operations on a connector also
#: meet real ones (a fuzzed name almost never names one): a running source and a
#: stopped sink, whose offsets may be altered.
_NAMES = ("src", "snk")


@pytest.fixture
def worker(start_worker: Callable[..., WorkerProcess], tmp_path: Path) -> WorkerProcess:
    worker = start_worker()
    (tmp_path / "in.txt").write_text("a\nb\n")
    for name, config in (
        ("src", {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt")}),
        ("snk", {"connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt")}),
    ):
        config |= {"topic": "lines"} if name == "src" else {"topics": "lines"}
        code, body = worker.request("PUT", f"/connectors/{name}/config", config)
        assert code == 201, body
    assert worker.request("PUT", "/connectors/snk/stop")[0] == 204
    return worker


def test_every_operation_fuzzed_answers_below_500_without_leaks(worker: WorkerProcess) -> None:
    schema = schemathesis.openapi.from_url(f"{worker.url}/openapi.json")
    problems: list[str] = []
    strategies = [schema.as_strategy(mode) for mode in GenerationMode]
    named = schema.include(path_regex=r"\{name\}")
    strategies += [
        named.as_strategy(mode, path_parameters={"name": name})
        for name in _NAMES
        for mode in GenerationMode
    ]

    @settings(max_examples=400, **_SETTINGS)
    @given(case=st.one_of(strategies))
    def fuzz(case: Any) -> None:
        response = case.call(timeout=10)
        problems.extend(_problems(case, response))

    fuzz()
    assert not problems, "\n".join(problems[:20])


def test_stateful_sequences_answer_below_500_without_leaks(worker: WorkerProcess) -> None:
    schema = schemathesis.openapi.from_url(f"{worker.url}/openapi.json")
    problems: list[str] = []

    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            problems.extend(_problems(case, response))

    Machine.run(settings=settings(max_examples=50, stateful_step_count=8, **_SETTINGS))
    assert not problems, "\n".join(problems[:20])
