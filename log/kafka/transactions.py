"""KafkaLog's transactional producer: confluent-kafka's transactional Producer behind
the same lifecycle as FileLog's (log.transactions.TransactionalProducerBase).

What maps to what:

  init_transactions     `Producer.init_transactions`: the broker's coordinator bumps
                        the transactional.id's epoch, fencing older producers, and
                        aborts what the previous one left open
  append                `produce` to the partition and wait for every delivery
                        report, through the same loop as KafkaLog's appends
                        (log.kafka.writer); librdkafka adds the partition to the
                        transaction before its first record
  send_offsets_...      `send_offsets_to_transaction`, with the group's metadata
                        from a consumer of that group that never joins it
  commit / abort        `commit_transaction` / `abort_transaction`

Differences from FileLog that callers see: a commit returns once the coordinator
has decided it; the markers reach the partitions moments later, so a read_committed
reader may see the records a little after `commit_transaction` returns (on FileLog,
after it returns at once). A producer compresses with one codec, chosen when it is
made (librdkafka sets compression per producer); `append(compression=...)` naming
another is refused. Fencing (librdkafka's _FENCED, PRODUCER_FENCED,
INVALID_PRODUCER_EPOCH) is ProducerFencedError, as on FileLog.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import confluent_kafka

from log.errors import InvalidConfigError, ProducerFencedError
from log.kafka.clients import ClientConfig, operation_error
from log.kafka.errors import KafkaOperationError
from log.kafka.writer import Writer
from log.records import Header, OffsetAndMetadata, TopicPartition
from log.transactions import DEFAULT_TRANSACTION_TIMEOUT_MS, TransactionalProducerBase

__all__ = ["KafkaTransactionalProducer"]

_KE = confluent_kafka.KafkaError
_FENCED_CODES = frozenset({_KE._FENCED, _KE.PRODUCER_FENCED, _KE.INVALID_PRODUCER_EPOCH})
_FENCED_NAMES = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})
#: The transactional calls wait for the broker's coordinator, which can take a few
#: seconds to load the transaction log after a broker start.
_MIN_TXN_TIMEOUT_S = 30.0


def _fenced(
    exc: confluent_kafka.KafkaException, topic: str | None = None, partition: int | None = None
) -> ProducerFencedError | None:
    """The ProducerFencedError a client error means, or None when it is another."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, confluent_kafka.KafkaError) and err.code() in _FENCED_CODES:
        return ProducerFencedError(-1, -1, -1, topic, partition, reason=err.str())
    return None


class _TransactionalWriter(Writer):
    """Writer's produce-and-wait loop on the one transactional producer."""

    def __init__(self, config: ClientConfig, producer: confluent_kafka.Producer) -> None:
        super().__init__(config)
        self._txn_producer = producer

    def _producer(self, codec: str, timeout_ms: int) -> confluent_kafka.Producer:
        return self._txn_producer


class KafkaTransactionalProducer(TransactionalProducerBase):
    """A producer of transactions on a Kafka cluster (see the module docstring)."""

    def __init__(
        self,
        config: ClientConfig,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS,
        compression: str = "none",
    ) -> None:
        super().__init__(transactional_id, transaction_timeout_ms)
        self._config = config
        self._compression = compression
        self._timeout_s = max(config.timeout_s, _MIN_TXN_TIMEOUT_S)
        settings = config.producer(compression)
        settings["transactional.id"] = transactional_id
        settings["transaction.timeout.ms"] = transaction_timeout_ms
        # librdkafka refuses a record timeout past the transaction's (a record still
        # retried after its transaction was aborted would be lost to it anyway).
        settings["message.timeout.ms"] = min(
            int(settings["message.timeout.ms"]),  # type: ignore[call-overload]
            transaction_timeout_ms,
        )
        self._producer = confluent_kafka.Producer(settings)
        self._writer = _TransactionalWriter(config, self._producer)

    def _call(self, what: str, call: Callable[..., object], *args: object) -> None:
        """A transactional API call; its failure as ProducerFencedError or
        KafkaOperationError."""
        try:
            call(*args)
        except confluent_kafka.KafkaException as exc:
            raise _fenced(exc) or operation_error(
                f"{what} of {self.transactional_id!r}", exc
            ) from None

    def _init(self) -> None:
        self._call("init_transactions", self._producer.init_transactions, self._timeout_s)

    def _begin(self) -> None:
        self._call("begin_transaction", self._producer.begin_transaction)

    def _append(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Sequence[Header]] | None,
        compression: str | None,
    ) -> range:
        if compression is not None and compression != self._compression:
            raise InvalidConfigError(
                "compression.type",
                compression,
                f"this transactional producer compresses with {self._compression!r} "
                "(one codec per producer on Kafka, chosen when it is made)",
            )
        try:
            return self._writer.append(
                topic,
                partition,
                values,
                keys=keys,
                timestamps=timestamps,
                headers=headers,
                codec=self._compression,
            )
        except KafkaOperationError as exc:
            if exc.code in _FENCED_NAMES:
                raise ProducerFencedError(-1, -1, -1, topic, partition, reason=exc.reason) from None
            raise
        except confluent_kafka.KafkaException as exc:  # a fatal error, raised by flush
            raise _fenced(exc, topic, partition) or operation_error(
                f"append to {topic}-{partition}", exc
            ) from None

    def _send_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> None:
        partitions = []
        for tp, oam in offsets.items():
            if isinstance(oam, int):
                oam = OffsetAndMetadata(oam)
            partitions.append(
                confluent_kafka.TopicPartition(
                    tp.topic, tp.partition, oam.offset, metadata=oam.metadata
                )
            )
        # A consumer of the group that never joins it: its metadata names the group
        # (generation -1), which is what a simple, non-member commit is.
        consumer = confluent_kafka.Consumer(self._config.group_client(group))
        try:
            metadata = consumer.consumer_group_metadata()
            self._call(
                "send_offsets_to_transaction",
                self._producer.send_offsets_to_transaction,
                partitions,
                metadata,
                self._timeout_s,
            )
        finally:
            consumer.close()

    def _end(self, *, commit: bool) -> None:
        if commit:
            self._call("commit_transaction", self._producer.commit_transaction, self._timeout_s)
        else:
            self._call("abort_transaction", self._producer.abort_transaction, self._timeout_s)

    def _close(self) -> None:
        self._producer.flush(self._config.timeout_s)
