"""`connect log …`: look into and drive the embedded log, like kcat / kafka-topics.

The log directory comes from `--log-dir` or from the `log.dir` key of a worker
config (`--worker-config`), given before or after the subcommand; a relative
`log.dir` is relative to the current directory, as it is for a worker started there.
Only `create` and `produce` create a missing log directory; every other subcommand
says `no log at PATH` instead of reading an empty log made on the spot. Bad input
gets one line on stderr and exit status 1, never a traceback; Ctrl-C exits 130 once
the command has stopped cleanly (see `_consume` and `_dump`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from connect.cli import log_args
from connect.cli.options import Interrupted, add_everywhere
from connect.cli.progress import Progress
from connect.config_files import ConfigFileError, kafka_worker_notes, read_config_file
from log import Consumer, FileLog, LogError, LogNotFoundError, Producer, TopicPartition

__all__ = ["register"]


class CliError(Exception):
    """A user mistake worth one line of explanation."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "log",
        help="inspect and use the embedded log",
        description="Inspect and use the embedded log.",
    )
    sub = parser.add_subparsers(dest="log_command", metavar="SUBCOMMAND", required=True)
    # Each subcommand's arguments (connect.cli.log_args) and the function that runs it;
    # the order is the order `connect log --help` lists them in.
    for declare, handler in (
        (log_args.topics, _topics),
        (log_args.create, _create),
        (log_args.describe, _describe),
        (log_args.alter, _alter),
        (log_args.produce, _produce),
        (log_args.consume, _consume),
        (log_args.dump, _dump),
        (log_args.delete, _delete),
        (log_args.groups, _groups),
    ):
        declare(sub).set_defaults(handler=handler)
    add_everywhere(parser, sub, log_args.log_options)
    parser.set_defaults(run=_run, creates_log=False)


def _run(args: argparse.Namespace) -> int:
    try:
        with _open_log(args) as log:
            return int(args.handler(log, args) or 0)
    except BrokenPipeError:
        # The reader of our stdout went away (`… | head`): done, quietly. Point stdout
        # at /dev/null so the interpreter's final flush does not fail once more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (CliError, LogError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


@contextmanager
def _open_log(args: argparse.Namespace) -> Iterator[FileLog]:
    directory = args.log_dir
    origin = ""
    if directory is None and args.worker_config:
        try:
            config = read_config_file(args.worker_config, "worker config")
        except ConfigFileError as exc:
            raise CliError(str(exc)) from None
        # A standalone worker's log may be named by Kafka's offsets file (connect.config_files).
        derived, _ = kafka_worker_notes(config, standalone=True)
        directory = derived.get("log.dir") or config.get("log.dir")
        if not directory:
            raise CliError(f"worker config {args.worker_config} has no log.dir")
        if not isinstance(directory, str):
            raise CliError(f"log.dir in {args.worker_config} must be a string")
        if not Path(directory).is_absolute():
            origin = (
                f" (log.dir {directory!r} of {args.worker_config} is relative to the "
                "current directory, as for a worker started here)"
            )
    if directory is None:
        raise CliError("no log directory: pass --log-dir DIR or --worker-config FILE")
    try:
        log = FileLog(directory, background=False, create=args.creates_log)
    except LogNotFoundError as exc:
        raise CliError(f"{exc}{origin}") from None
    try:
        yield log
    finally:
        log.close()


def _parse_config(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--config expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _topics(log: FileLog, args: argparse.Namespace) -> None:
    for name in log.list_topics(include_internal=args.all):
        print(name)


def _create(log: FileLog, args: argparse.Namespace) -> None:
    log.create_topic(args.topic, args.partitions, config=_parse_config(args.config))
    print(f"created topic {args.topic} with {args.partitions} partition(s)")


def _alter(log: FileLog, args: argparse.Namespace) -> None:
    if args.partitions is None and not args.config:
        raise CliError("nothing to alter: pass --partitions and/or --config")
    if args.config:
        log.alter_topic_config(args.topic, _parse_config(args.config))
    if args.partitions is not None:
        log.create_partitions(args.topic, args.partitions)
    print(f"altered topic {args.topic}")


def _describe(log: FileLog, args: argparse.Namespace) -> None:
    desc = log.describe_topic(args.topic)
    if args.json:
        print(
            json.dumps(
                {
                    "topic": desc.name,
                    "partitions": [
                        {
                            "partition": p.partition,
                            "earliest_offset": p.earliest_offset,
                            "latest_offset": p.latest_offset,
                            "size_bytes": p.size_bytes,
                            "segments": p.segments,
                        }
                        for p in desc.partitions
                    ],
                    "size_bytes": desc.size_bytes,
                    "config": desc.config,
                },
                indent=2,
            )
        )
        return
    print(f"Topic: {desc.name}\tPartitions: {len(desc.partitions)}\tSize: {desc.size_bytes} bytes")
    print(f"{'PARTITION':>9}  {'EARLIEST':>12}  {'LATEST':>12}  {'SIZE':>12}  SEGMENTS")
    for p in desc.partitions:
        print(
            f"{p.partition:>9}  {p.earliest_offset:>12}  {p.latest_offset:>12}  "
            f"{p.size_bytes:>12}  {p.segments}"
        )
    defaults = type(log.topic_config(desc.name))().to_dict()
    overrides = {k: v for k, v in desc.config.items() if defaults.get(k) != v}
    if overrides:
        print("Config: " + ", ".join(f"{k}={v}" for k, v in sorted(overrides.items())))


def _produce(log: FileLog, args: argparse.Namespace) -> None:
    count = log.partition_count(args.topic)  # unknown topic: a clear error up front
    if args.partition is not None and not 0 <= args.partition < count:
        raise CliError(f"topic {args.topic} has no partition {args.partition} (it has {count})")
    sep = args.key_separator
    sent = 0
    try:
        # Leaving the block flushes: on Ctrl-C every line read so far is appended.
        with Producer(log, linger_ms=50) as producer:
            for raw in sys.stdin.buffer:
                line = raw.rstrip(b"\r\n")
                key = None
                if sep is not None:
                    k, found, v = line.partition(sep.encode())
                    if found:
                        key, line = k, v
                producer.send(args.topic, line, key, partition=args.partition)
                sent += 1
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: produced {sent} record(s) to {args.topic}, every line read before Ctrl-C"
        ) from None
    print(f"produced {sent} record(s) to {args.topic}", file=sys.stderr)


def _consume(log: FileLog, args: argparse.Namespace) -> None:
    """Poll and print until a limit or Ctrl-C. Ctrl-C only sets a flag the loop reads
    between polls: a KeyboardInterrupt between a poll and its print would let a
    group's final commit cover records never printed. After the consumer closed
    (committing what was printed), the interrupt goes on to `connect` (exit 130)."""
    count = log.partition_count(args.topic)
    if args.partition is not None and not 0 <= args.partition < count:
        raise CliError(f"topic {args.topic} has no partition {args.partition} (it has {count})")
    if args.max_messages is not None and args.max_messages < 0:
        raise CliError(f"--max-messages must be 0 or more, got {args.max_messages}")
    if args.offset is not None and args.partition is None:
        raise CliError("--offset needs --partition")
    if args.offset is not None and args.offset < 0:
        raise CliError(f"--offset must be 0 or more, got {args.offset}")
    reset = "earliest" if args.from_beginning else "latest"
    consumer = Consumer(
        log,
        group_id=args.group,
        auto_offset_reset=reset,
        enable_auto_commit=args.group is not None,
        isolation_level=args.isolation_level,
    )
    stop = {"now": False}

    def _interrupt(_sig: int, _frame: object) -> None:
        stop["now"] = True

    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        if args.group is not None and args.partition is None:
            consumer.subscribe([args.topic])
        else:
            parts = [args.partition] if args.partition is not None else range(count)
            consumer.assign([TopicPartition(args.topic, p) for p in parts])
        if args.offset is not None:
            tp = TopicPartition(args.topic, args.partition)
            start, end = log.earliest_offset(*tp), log.latest_offset(*tp)
            if not start <= args.offset <= end:
                raise CliError(
                    f"offset {args.offset} is out of range for {tp}: "
                    f"valid offsets are {start}..{end}"
                )
            consumer.seek(tp, args.offset)
        printed = 0
        idle_since = time.monotonic()
        out = sys.stdout
        while not stop["now"] and args.max_messages != 0:
            limit = None if args.max_messages is None else args.max_messages - printed
            records = consumer.poll(0.2, max_records=limit)
            if records:
                idle_since = time.monotonic()
                try:
                    out.write("".join(_format(rec, args) for rec in records))
                    out.flush()
                except BrokenPipeError:
                    # The reader went away: none of this poll counts as printed, so
                    # the group's closing commit must not cover it.
                    for tp, offset in _first_offsets(records).items():
                        consumer.seek(tp, offset)
                    raise
                printed += len(records)
            if args.max_messages is not None and printed >= args.max_messages:
                break
            if (
                args.timeout_ms is not None
                and (time.monotonic() - idle_since) * 1000 >= args.timeout_ms
            ):
                break
    finally:
        try:
            consumer.close()
        finally:
            signal.signal(signal.SIGINT, previous)
    if stop["now"]:
        raise KeyboardInterrupt


def _first_offsets(records: list[Any]) -> dict[TopicPartition, int]:
    """Each partition's first offset among `records`."""
    firsts: dict[TopicPartition, int] = {}
    for rec in records:
        firsts.setdefault(TopicPartition(rec.topic, rec.partition), rec.offset)
    return firsts


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def _format(rec: Any, args: argparse.Namespace) -> str:
    if args.json:
        return (
            json.dumps(
                {
                    "topic": rec.topic,
                    "partition": rec.partition,
                    "offset": rec.offset,
                    "timestamp": rec.timestamp,
                    "key": _text(rec.key),
                    "value": _text(rec.value),
                    "headers": [[name, _text(value)] for name, value in rec.headers],
                }
            )
            + "\n"
        )
    value = _text(rec.value)
    value = "null" if value is None else value
    if args.print_key:
        key = _text(rec.key)
        return f"{'null' if key is None else key}\t{value}\n"
    return value + "\n"


def _dump(log: FileLog, args: argparse.Namespace) -> None:
    """Read partition by partition up to the ends seen at the start (the known end the
    progress bar counts offsets towards; compacted gaps count as done).

    With --output naming a file (not a stream such as /dev/stdout):
    1. Write to OUTPUT.partial beside it (a name that says what it holds if even this
       process is killed).
    2. Complete: fsync it and rename it to OUTPUT, replacing any older file at once.
    3. Interrupted or failed: remove OUTPUT.partial and say OUTPUT was not written;
       an older OUTPUT is left as it was.
    """
    count = log.partition_count(args.topic)
    spans = [
        (p, log.earliest_offset(args.topic, p), log.latest_offset(args.topic, p))
        for p in range(count)
    ]
    total = sum(end - start for _, start, end in spans)
    target = Path(args.output) if args.output else None
    if target is None or (target.exists() and not target.is_file()):
        # stdout, or a stream named as a file (/dev/stdout, a FIFO): nothing to rename.
        name = "stdout" if target is None else str(target)
        try:
            if target is None:
                _dump_spans(log, args, spans, total, sys.stdout)
            else:
                with open(target, "w", encoding="utf-8") as out:
                    written = _dump_spans(log, args, spans, total, out)
                print(f"dumped {written} record(s) of {args.topic} to {name}", file=sys.stderr)
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted: the dump of {args.topic} on {name} is partial"
            ) from None
        return
    partial = target.with_name(target.name + ".partial")
    done = False
    written = 0
    try:
        # Step 1
        with open(partial, "w", encoding="utf-8") as out:
            written = _dump_spans(log, args, spans, total, out)
            # Step 2
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, target)
        done = True
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: {args.output} not written (the dump of {args.topic} was "
            f"incomplete; its partial file was removed)"
        ) from None
    except (LogError, OSError, ValueError) as exc:
        raise CliError(
            f"{args.output} not written, the dump of {args.topic} failed: {exc}"
        ) from None
    finally:
        # Step 3
        if not done:
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
    print(f"dumped {written} record(s) of {args.topic} to {args.output}", file=sys.stderr)


def _dump_spans(
    log: FileLog,
    args: argparse.Namespace,
    spans: list[tuple[int, int, int]],
    total: int,
    out: Any,
) -> int:
    """Write the records of `spans` (partition, start, end) to `out`; how many."""
    written = 0
    with Progress(total, label=args.topic, enabled=args.progress) as progress:
        for p, start, end in spans:
            offset = start
            while offset < end:
                records = log.read(args.topic, p, offset, max_bytes=4 << 20)
                records = [r for r in records if r.offset < end]
                if not records:
                    break
                out.write("".join(_format(rec, args) for rec in records))
                written += len(records)
                progress.advance(records[-1].offset + 1 - offset)
                offset = records[-1].offset + 1
            progress.advance(end - offset)  # whatever compaction or retention left out
    return written


def _internal_topic(log: FileLog, topic: str, args: argparse.Namespace) -> str | None:
    """What `topic` holds if it is internal: one of the runtime's topics under its
    default name, the name the --worker-config gives it or the name a worker running
    on this log gives it (connect.worker.ownership), or any `__` topic (the log's own,
    such as __consumer_offsets)."""
    from connect.worker.config import WORKER_CONFIG
    from connect.worker.ownership import INTERNAL_TOPIC_KEYS, running_workers

    if topic == "__consumer_offsets":
        return "consumer groups' and sink connectors' committed offsets"
    if topic.startswith("__"):
        return "the log's own state"
    keys = {WORKER_CONFIG.keys()[key].default: key for key in INTERNAL_TOPIC_KEYS}
    if args.worker_config:
        with contextlib.suppress(ConfigFileError):  # _open_log reports a bad file
            config = read_config_file(args.worker_config, "worker config")
            keys.update({config[k]: k for k in INTERNAL_TOPIC_KEYS if k in config})
    for worker in running_workers(log.directory):
        named = worker.get("internal_topics")
        if isinstance(named, dict):
            keys.update({t: k for t, k in named.items() if k in INTERNAL_TOPIC_KEYS})
    key = keys.get(topic)
    return None if key is None else INTERNAL_TOPIC_KEYS[key]


def _delete(log: FileLog, args: argparse.Namespace) -> None:
    holds = _internal_topic(log, args.topic, args)
    if holds is not None and not args.force:
        raise CliError(
            f"{args.topic} is an internal topic ({holds}); deleting it loses that for "
            "every worker on this log: pass --force to delete it anyway"
        )
    log.delete_topic(args.topic)
    print(f"deleted topic {args.topic}")


def _groups(log: FileLog, args: argparse.Namespace) -> None:
    for group in log.list_groups():
        print(group)
        for tp, oam in sorted(log.committed_offsets(group).items()):
            try:
                end = log.latest_offset(tp.topic, tp.partition)
            except LogError:  # the topic was deleted since: no end, no lag
                print(f"  {tp}\tcommitted={oam.offset}")
                continue
            print(f"  {tp}\tcommitted={oam.offset}\tend={end}\tlag={end - oam.offset}")
