"""The plugin API: everything a connector, converter or transform author needs, and
nothing of the runtime (a test fails if this package imports the runtime, `log` or
`connectors`). Plugins import from here, `from connect.api import ...`, and from
nothing else of `connect` (a test keeps connectors to it).

The columnar part — `SourceBatch`, `SinkBatch` and the Connect ⇄ Arrow mapping
(`arrow_type`, `schema_of`, `batch_from_values`, `to_connect`, `file_batch`,
`decimal_type`, `ARROW_TIMESTAMP`) — is exported too, but loaded on first use (the
module `__getattr__` below): numpy and pyarrow cost a task process tens of MB, and a
worker whose plugins never touch a column must not pay for them. So is
`JsonArrowReader`, JsonConverter's bytes read into Arrow batches (`json_arrow_read`),
for a plugin that decodes that format itself.
"""

import importlib
from typing import TYPE_CHECKING, Any

from connect.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    Password,
    Validator,
    at_least,
    between,
    non_empty_string,
    one_of,
    valid_list,
)
from connect.api.connector import Connector, ConnectorContext, SinkConnector, SourceConnector
from connect.api.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT8_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Field,
    Schema,
    Struct,
    Type,
    validate_value,
)
from connect.api.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    DataError,
    IllegalWorkerStateError,
    NotFoundError,
    RetriableError,
    SchemaError,
)
from connect.api.exactly_once import (
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    TransactionContext,
)
from connect.api.headers import Header, Headers
from connect.api.logical import Date, Decimal, Time, Timestamp, is_logical
from connect.api.plugins import (
    Converter,
    HeaderConverter,
    Predicate,
    SchemaAndValue,
    Transformation,
)
from connect.api.records import (
    ConnectRecord,
    RecordMetadata,
    SinkRecord,
    SourceRecord,
    TopicPartition,
)
from connect.api.task import (
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    Task,
)
from connect.api.text import java_string

if TYPE_CHECKING:  # what the lazy names are, for readers and type checkers
    from connect.api.arrow import TIMESTAMP as ARROW_TIMESTAMP
    from connect.api.arrow import (
        arrow_type,
        batch_from_values,
        decimal_type,
        file_batch,
        schema_of,
        to_connect,
    )
    from connect.api.batches import SourceBatch
    from connect.api.json_arrow_read import JsonArrowReader
    from connect.api.sink_batch import SinkBatch

#: Exported name → (module, name there): imported on first access, see the docstring.
_LAZY: dict[str, tuple[str, str]] = {
    "ARROW_TIMESTAMP": ("connect.api.arrow", "TIMESTAMP"),
    "JsonArrowReader": ("connect.api.json_arrow_read", "JsonArrowReader"),
    "SinkBatch": ("connect.api.sink_batch", "SinkBatch"),
    "SourceBatch": ("connect.api.batches", "SourceBatch"),
    "arrow_type": ("connect.api.arrow", "arrow_type"),
    "batch_from_values": ("connect.api.arrow", "batch_from_values"),
    "decimal_type": ("connect.api.arrow", "decimal_type"),
    "file_batch": ("connect.api.arrow", "file_batch"),
    "schema_of": ("connect.api.arrow", "schema_of"),
    "to_connect": ("connect.api.arrow", "to_connect"),
}


def __getattr__(name: str) -> Any:
    """A lazy export (PEP 562), imported once and then kept as a module global."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ARROW_TIMESTAMP",
    "BOOLEAN_SCHEMA",
    "BYTES_SCHEMA",
    "FLOAT32_SCHEMA",
    "FLOAT64_SCHEMA",
    "INT8_SCHEMA",
    "INT16_SCHEMA",
    "INT32_SCHEMA",
    "INT64_SCHEMA",
    "NO_DEFAULT",
    "OPTIONAL_BOOLEAN_SCHEMA",
    "OPTIONAL_BYTES_SCHEMA",
    "OPTIONAL_FLOAT32_SCHEMA",
    "OPTIONAL_FLOAT64_SCHEMA",
    "OPTIONAL_INT8_SCHEMA",
    "OPTIONAL_INT16_SCHEMA",
    "OPTIONAL_INT32_SCHEMA",
    "OPTIONAL_INT64_SCHEMA",
    "OPTIONAL_STRING_SCHEMA",
    "STRING_SCHEMA",
    "AlreadyExistsError",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "ConnectError",
    "ConnectRecord",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Converter",
    "DataError",
    "Date",
    "Decimal",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Field",
    "Header",
    "HeaderConverter",
    "Headers",
    "IllegalWorkerStateError",
    "Importance",
    "JsonArrowReader",
    "NotFoundError",
    "OffsetStorageReader",
    "Password",
    "Predicate",
    "RecordMetadata",
    "RetriableError",
    "Schema",
    "SchemaAndValue",
    "SchemaError",
    "SinkBatch",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceBatch",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Struct",
    "Task",
    "Time",
    "Timestamp",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "Type",
    "Validator",
    "arrow_type",
    "at_least",
    "batch_from_values",
    "between",
    "decimal_type",
    "file_batch",
    "is_logical",
    "java_string",
    "non_empty_string",
    "one_of",
    "schema_of",
    "to_connect",
    "valid_list",
    "validate_value",
]
