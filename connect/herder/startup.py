"""What a herder does to its log before its stores replay, so that the waits of a log
behind a network (Kafka) overlap instead of queuing one behind another in a worker's
start.

Numbered as in `prepare_log`:
1. The log makes the producer of its appends (KafkaLog.prepare_appends: its
   idempotence handshake, about 0.5 s on a real broker, runs while the stores replay;
   else the first append after the replays waited for it: a distributed worker's group
   join, a standalone worker's first status).
2. The internal topics are made side by side, one thread each (KafkaLog only: a log
   with the `prepare_appends` hook). Each create waits for the controller, then for
   the broker's metadata, the offsets topic for its 25 partitions' leaders: 0.1-1 s
   each on a real broker, one after another when each store made its own topic. A
   topic that exists is left as it is; the stores still make theirs if missing (they
   tolerate an existing one), so a log without the hook is unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from log import Log, TopicExistsError

__all__ = ["internal_topics", "prepare_log"]

#: The config every store table makes its topic with (connect.storage.LogTable).
_COMPACT = {"cleanup.policy": "compact"}

TopicSpec = tuple[str, int, Mapping[str, object]]


def internal_topics(config: Mapping[str, Any]) -> list[TopicSpec]:
    """(name, partitions, config) of the stores' topics, as the stores make them."""
    return [
        (str(config["config.storage.topic"]), 1, _COMPACT),
        (str(config["offset.storage.topic"]), int(config["offset.storage.partitions"]), _COMPACT),
        (str(config["status.storage.topic"]), int(config["status.storage.partitions"]), _COMPACT),
    ]


def prepare_log(log: Log, topics: Sequence[TopicSpec]) -> None:
    """Steps 1 and 2 of the module docstring; a failed create raises here as the
    store's own would have."""
    # Step 1
    prepare = getattr(log, "prepare_appends", None)
    if prepare is None:
        return  # the embedded log: nothing to prepare, a topic made in a few ms
    prepare()

    # Step 2
    def make(name: str, partitions: int, config: Mapping[str, object]) -> None:
        with contextlib.suppress(TopicExistsError):
            log.create_topic(name, partitions, config=config)

    with ThreadPoolExecutor(len(topics), thread_name_prefix="internal-topic") as pool:
        made = [pool.submit(make, *spec) for spec in topics]
    for future in made:
        future.result()
