"""S3 connectors: S3Sink writes topics to S3 objects (Confluent's layout, formats and
partitioners; exactly once for deterministic layouts), S3Source reads them back
(restore) or reads any objects under a prefix (GENERIC). See docs/s3.md."""

from connectors.s3.sink import S3SinkConnector, S3SinkTask
from connectors.s3.source import S3SourceConnector, S3SourceTask

__all__ = ["S3SinkConnector", "S3SinkTask", "S3SourceConnector", "S3SourceTask"]
