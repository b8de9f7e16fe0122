"""What the log-based CDC connectors (PostgresCdcSource, MySqlCdcSource) share as
Connectors: one task, since a database has one replication stream to read (Debezium's
single task); a config check that runs the connector's own parsing after the ConfigDef,
so a mistake only the parser finds (a regex, a URL) lands on the key it concerns; and
exactly-once support, since their offsets are log positions (an LSN, a binlog position
with the rows already emitted): the same offset yields the same changes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from connect.api import ConfigDef, ConfigError, ConfigValue, ExactlyOnceSupport, SourceConnector

__all__ = ["SingleTaskCdcConnector"]


class SingleTaskCdcConnector(SourceConnector):
    """Checks the config and hands it to its single task. A subclass names its
    `CONFIG`, its `parse` (the module's `parse_config`) and its `task_class`."""

    CONFIG: ClassVar[ConfigDef]
    parse: ClassVar[Callable[[Mapping[str, Any]], Any]]

    def config(self) -> ConfigDef:
        return self.CONFIG

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        results = self.CONFIG.validate(props)
        if any(r.errors for r in results):
            return results
        try:
            type(self).parse(props)
        except ConfigError as exc:
            for result in results:
                if result.name == exc.name:
                    result.errors.append(str(exc))
        return results

    def start(self, props: Mapping[str, str]) -> None:
        type(self).parse(props)
        self._props = dict(props)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]  # one replication stream, one reader

    def stop(self) -> None:
        pass

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        return ExactlyOnceSupport.SUPPORTED
