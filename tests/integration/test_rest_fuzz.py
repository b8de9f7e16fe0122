"""Fuzzing a real worker's REST API from its own OpenAPI description (schemathesis):
whatever a client sends, the worker answers with a status below 500, and no body
carries a traceback, a Python frame or a server file path.

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
    if _LEAK.search(response.text or ""):
        out.append(f"{where} leaked: {response.text[:300]}")
    return out


@pytest.fixture
def worker(start_worker: Callable[..., WorkerProcess], tmp_path: Path) -> WorkerProcess:
    return start_worker()


def test_every_operation_fuzzed_answers_below_500_without_leaks(worker: WorkerProcess) -> None:
    schema = schemathesis.openapi.from_url(f"{worker.url}/openapi.json")
    problems: list[str] = []

    @settings(max_examples=400, **_SETTINGS)
    @given(case=schema.as_strategy() | schema.as_strategy(GenerationMode.NEGATIVE))
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

    Machine.run(settings=settings(max_examples=30, stateful_step_count=8, **_SETTINGS))
    assert not problems, "\n".join(problems[:20])
