"""Zombie fencing before a new generation of an exactly-once source's tasks starts
(Kafka Connect's KIP-618 round, which Kafka runs on the leader).

Why: a task of the old generation may still be running somewhere (a worker cut off,
a process not yet dead). Once task configs change, source partitions move between
task ids, so the new task 0 fencing only its own predecessor (`init_transactions` on
its transactional.id) is not enough: every transactional.id of the old generation
must get a new epoch before any new task writes. The round (numbered as in the code):

1. Read the config topic to its end: is the connector pending fencing (task configs
   newer than its last `tasks-fencing-<name>` record), and what count did that
   record give?
2. Pending with a recorded count: fence the old generation's ids
   `<prefix>-<name>-0 … <old count - 1>` (connect.worker.exactly_once_config.
   fence_producers; each aborts what its producer left open). Skipped when both the
   old and the new generation have one task: the new task's own init fences it.
3. Read the config topic again: a newer task generation committed meanwhile fails
   the round (its own round fences it); else write the task-count record, once.
4. No record yet (the connector's first generation): just write one.

The task-count record makes the round happen once per generation: every worker
replays it, and a task waits for it before it starts (connect.herder.standalone,
connect.herder.distributed). The round is idempotent (a second fencing gives the
ids one more epoch), so a round run twice by racing workers does no harm.

Who runs rounds (`runs_fencing`): a worker with `exactly.once.source.support`
`preparing` or `enabled`, as Kafka's leader serves fencing requests while the
cluster is being upgraded: in a rolling upgrade every worker is `preparing` first,
so the tasks of the first `enabled` workers find a leader that fences for them,
though its own tasks still run without transactions. Only an `enabled` worker's
tasks wait for the round (`needs_fencing`).

Offsets altered or reset (`PATCH`/`DELETE /connectors/{name}/offsets`) of a source
connector on such a worker: the ids of its last fenced generation are fenced first
(`fence_for_offsets`), as Kafka does, so that a zombie task of it can no longer
commit offsets over the operator's.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from typing import Any, Protocol

from connect.api import ConnectError, SourceConnector
from connect.herder.api import BadRequestError
from connect.plugins import Plugins
from connect.storage import ConfigStore, State
from connect.worker.exactly_once_config import (
    exactly_once_enabled,
    fence_producers,
    fencing_ready,
    transaction_timeout_ms,
    transactional_id,
)
from log import Log

__all__ = [
    "fence_before_tasks",
    "fence_for_offsets",
    "fence_on_request",
    "fence_zombies",
    "needs_fencing",
    "runs_fencing",
]

_log = logging.getLogger("connect.herder")


def needs_fencing(
    worker_config: Mapping[str, Any], plugins: Plugins, props: Mapping[str, str] | None
) -> bool:
    """Whether the connector of `props` runs exactly once here (its tasks wait for
    their generation's round): a source on a worker with
    exactly.once.source.support=enabled."""
    return exactly_once_enabled(worker_config) and _is_source(plugins, props)


def runs_fencing(
    worker_config: Mapping[str, Any], plugins: Plugins, props: Mapping[str, str] | None
) -> bool:
    """Whether this worker runs the connector's rounds (module docstring): a source
    on a worker with exactly.once.source.support `preparing` or `enabled`."""
    return fencing_ready(worker_config) and _is_source(plugins, props)


def _is_source(plugins: Plugins, props: Mapping[str, str] | None) -> bool:
    if props is None:
        return False
    try:
        return issubclass(plugins.resolve_connector(props), SourceConnector)
    except Exception:
        return False  # an unknown class fails its tasks anyway


def fence_zombies(
    configs: ConfigStore,
    log: Log,
    worker_config: Mapping[str, Any],
    *,
    worker_id: str,
    name: str,
    props: Mapping[str, str],
) -> int:
    """The round of the module docstring for connector `name`; how many
    transactional ids it fenced."""
    # Step 1
    pending, recorded, count, generation = configs.fencing_state(name)
    if not pending and recorded is not None:
        return 0  # this generation's round is done
    fenced = 0
    if recorded is not None and not (recorded == 1 and count == 1):
        # Step 2
        ids = [transactional_id(worker_config, worker_id, name, i) for i in range(recorded)]
        fence_producers(
            log, ids, transaction_timeout_ms=transaction_timeout_ms(worker_config, props)
        )
        fenced = len(ids)
        _log.info("connector %s: fenced the producers of its %d previous tasks", name, recorded)
    # Step 3 (and 4)
    _, _, count_now, generation_now = configs.fencing_state(name)
    if generation_now != generation:
        raise ConnectError(
            f"connector {name}: its task configs changed while the producers of its "
            "previous tasks were fenced; the round for the newer tasks fences them"
        )
    configs.put_task_count(name, count_now)
    return fenced


class _Herder(Protocol):
    """What the rounds below need of a herder (connect.herder.base.LogHerder)."""

    config: dict[str, Any]
    plugins: Plugins
    configs: ConfigStore
    log: Log
    _worker_id: str

    def _on_status(
        self, connector: str, task: int | None, state: State, trace: str | None
    ) -> None: ...


def _round(herder: _Herder, name: str, props: Mapping[str, str]) -> int:
    return fence_zombies(
        herder.configs,
        herder.log,
        herder.config,
        worker_id=herder._worker_id,
        name=name,
        props=props,
    )


def fence_before_tasks(herder: _Herder, name: str, props: Mapping[str, str], count: int) -> bool:
    """The round before `count` tasks of connector `name` start here; False when it
    failed, its tasks then reported FAILED with the reason (Kafka's: a failed
    fencing is not retried by itself; a restart of the tasks runs it again)."""
    if not runs_fencing(herder.config, herder.plugins, props):
        return True
    try:
        _round(herder, name, props)
    except Exception as exc:
        _log.error("connector %s: fencing its previous tasks failed", name, exc_info=exc)
        trace = "".join(traceback.format_exception(exc))
        for task in range(count):
            herder._on_status(name, task, State.FAILED, trace)
        return False
    return True


def fence_on_request(herder: _Herder, name: str, props: Mapping[str, str]) -> int:
    """`PUT /connectors/{name}/fence`: the round now (nothing to do when the current
    generation's is done); how many ids it fenced."""
    if not fencing_ready(herder.config):
        raise BadRequestError(
            "This worker's exactly.once.source.support is 'disabled': there are no "
            "transactional producers to fence (set it to 'preparing' or 'enabled')"
        )
    if not runs_fencing(herder.config, herder.plugins, props):
        raise BadRequestError(f"Connector {name} is not a source connector: nothing to fence")
    return _round(herder, name, props)


def fence_for_offsets(herder: _Herder, name: str, props: Mapping[str, str]) -> int:
    """Before a source connector's offsets are altered or reset: fence the
    transactional ids of its last fenced task generation (module docstring); how
    many. Nothing when this worker does not run rounds or no generation of the
    connector ever ran exactly once (no task-count record: no transactional
    producer of it was ever started)."""
    if not runs_fencing(herder.config, herder.plugins, props):
        return 0
    recorded = herder.configs.fencing_state(name)[1]
    if not recorded:
        return 0
    config, worker_id = herder.config, herder._worker_id
    ids = [transactional_id(config, worker_id, name, i) for i in range(recorded)]
    fence_producers(herder.log, ids, transaction_timeout_ms=transaction_timeout_ms(config, props))
    _log.info(
        "connector %s: fenced its %d tasks' producers before its offsets change", name, recorded
    )
    return len(ids)
