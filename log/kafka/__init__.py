"""The log on Apache Kafka: `KafkaLog` implements `log.Log` through confluent-kafka.

Modules, one job each: `clients` (client settings, cluster probe), `topics` (topic
administration with and without an admin API), `registry` (the partition counts and
configs Tributary asked for), `writer` (batched produce, delivery confirmed),
`reader` (reads by offset), `groups` (committed offsets, group membership), `log`
(the `Log` methods over all of them). Import cost: confluent-kafka is imported only
by this package, which the worker loads only when `bootstrap.servers` is set.
"""

from log.kafka.errors import AdminUnavailableError, KafkaOperationError
from log.kafka.log import KafkaLog

__all__ = ["AdminUnavailableError", "KafkaLog", "KafkaOperationError"]
