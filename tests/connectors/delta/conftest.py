"""The real-worker fixtures of tests/integration, for the DeltaSink's pipeline tests."""

from tests.integration.conftest import (  # noqa: F401 (fixtures)
    _no_worker_outlives_its_test,
    start_worker,
)
