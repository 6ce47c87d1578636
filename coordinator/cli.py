"""``python -m coordinator``: serve, bench, log dump."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

from coordinator.config.properties import read_properties
from coordinator.observability.logs import configure_logging, get_logger

from .config import ConfigError, ServerConfig
from .config.profiles import PROFILES, SERVE, profile

if TYPE_CHECKING:
    from .app import App

COMMANDS = ("serve", "bench", "soak", "log")
"""The commands; ``main`` builds the parser of the one given only."""

BENCHES: dict[str, tuple[str, str]] = {
    "codec": ("coordinator.bench.codec", "µs per decode/encode of hot messages"),
    "store": ("coordinator.bench.store", "durable commits/s and replay speed"),
    "commits": ("coordinator.bench.commits", "durable offset commits/s the server takes from a "
                "raw-wire load generator"),
    "load": ("coordinator.bench.store_load", "start-to-serving time of a large store, with and "
             "without snapshots"),
    "assignor": ("assignors.bench", "server-side assignor run times"),
    "produce-consume": ("coordinator.bench.produce_consume",
                        "records/s, MB/s and end-to-end latency"),
    "storm": ("coordinator.bench.storm", "bystander heartbeat latency while a large group "
              "churns, with and without assignment batching and offload"),
    "share": ("coordinator.bench.share", "records/s consumed and acknowledged by share "
              "consumers, next to a consumer group's Fetch"),
    "heartbeats": ("coordinator.bench.heartbeats", "heartbeats/s and latency on a listener of a "
                   "security protocol (PLAINTEXT, SSL, SASL_*)"),
    "fixture": ("coordinator.bench.fixture", "ms from the test fixture's start to a server "
                "accepting clients, and from subscribe to a first assignment"),
    "rebalance": ("coordinator.bench.rebalance", "ms until real consumers own their "
                  "partitions: a new group, ten joining at once, a leave"),
    "regex": ("coordinator.bench.regex", "ms to resolve regex subscriptions against 10k "
              "topics, and what it costs the event loop"),
    "telemetry": ("coordinator.bench.telemetry", "heartbeat p99 and the server's RSS while "
                  "1,000 clients push their metrics every second (KIP-714), against none"),
    "members": ("coordinator.bench.members", "the server's RSS with many KIP-848 members (one "
                "group, and 100 groups), and whether it keeps answering"),
    "timeline-page": ("coordinator.bench.timeline_page", "ms for headless Chromium to draw a "
                      "large group's rebalance timeline page (a storm's store)"),
}
"""Each bench: its module (``add_arguments``, ``run``) and its help. A module is imported only
when its command is parsed: ``serve`` does not pay for the clients, soaks and load generators
the benches import, and ``bench storm`` imports the storm's module only (not the other
benches': the clients, protobuf, Chromium's helpers)."""

SOAKS: dict[str, tuple[str, str]] = {
    "chaos": ("coordinator.soak.chaos", "real clients while the server is killed -9 in a loop: "
              "acknowledged commits and records lost, reconvergence"),
    "fuzz": ("coordinator.soak.fuzz", "malformed frames of every API while a healthy client "
             "heartbeats: crashes, the healthy client's latency"),
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


def _parse_override(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value


def build_parser(command: str | None = None, sub: str | None = None
                 ) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone (what ``main`` parses with: a
    command's parser imports what it needs, the others' are not built); with ``sub`` (a bench
    or a soak of ``command``), of that one's arguments alone: the others are listed, their
    modules not imported."""
    parser = argparse.ArgumentParser(prog="python -m coordinator",
                                     description="A Kafka group coordinator you can run on your "
                                     "laptop.")
    commands = parser.add_subparsers(dest="command", required=True)
    if command in (None, "serve"):
        _add_serve(commands)
    if command in (None, "bench"):
        _add_benches(commands, sub if command == "bench" else None)
    if command in (None, "soak"):
        _add_soaks(commands, sub if command == "soak" else None)
    if command in (None, "log"):
        _add_log(commands)
    return parser


Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _add_serve(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="run the server")
    serve.add_argument("--config", help="a server.properties file")
    serve.add_argument("--profile", choices=sorted(PROFILES), default=SERVE,
                       help="values applied before the file and the overrides: serve (Kafka's "
                       "defaults) or test (Kafka's semantics with test timings)")
    serve.add_argument("--override", action="append", default=[], type=_parse_override,
                       metavar="KEY=VALUE", help="set a config, after the file (repeatable)")
    serve.add_argument("--log-level", default="INFO")
    serve.add_argument("--add-scram", action="append", default=[], metavar="CREDENTIAL",
                       help="a SCRAM credential to add at start unless the user has one for "
                       "the mechanism, as kafka-storage format's: "
                       "'SCRAM-SHA-256=[name=alice,password=alice-secret]' (repeatable)")


def _add_benches(commands: Commands, only: str | None = None) -> None:
    _add_listed(commands, "bench", "benchmarks that print numbers", BENCHES, only)


def _add_soaks(commands: Commands, only: str | None = None) -> None:
    _add_listed(commands, "soak", "long runs under faults that print what held", SOAKS, only)


def _add_listed(commands: Commands, command: str, text: str,
                listed: dict[str, tuple[str, str]], only: str | None) -> None:
    """``command`` with a sub-command per entry of ``listed`` (its module and help); only
    ``only``'s module (every one's, if None) is imported for its arguments."""
    parser = commands.add_parser(command, help=text)
    subs = parser.add_subparsers(dest=command, required=True)
    for name, (module, help_text) in listed.items():
        sub = subs.add_parser(name, help=help_text)
        if only is None or name == only:
            _module(module).add_arguments(sub)


def _add_log(commands: Commands) -> None:
    log_cmd = commands.add_parser("log", help="read a store")
    log_commands = log_cmd.add_subparsers(dest="log_command", required=True)
    dump = log_commands.add_parser("dump", help="every record as one JSON object per line")
    dump.add_argument("--log-dirs", required=True, help="the server's log.dirs")
    dump.add_argument("--partition", type=int, default=None,
                      help="one coordinator partition (__consumer_offsets-N) only")
    dump.add_argument("--metadata", action="store_true",
                      help="the metadata records (__cluster_metadata-0: topics, ACLs, ...) instead")
    timeline = log_commands.add_parser(
        "timeline", help="the rebalance timeline the store's group records give, one JSON event "
        "per line (what GET /timeline of the control endpoint says, less its annotations)")
    timeline.add_argument("log_dir", help="the server's log.dirs")
    timeline.add_argument("--group", default=None, help="one group only")
    timeline.add_argument("--html", default=None, metavar="FILE",
                          help="write the group's timeline page (one self-contained HTML file, "
                          "what GET /groups/<group>/timeline.html draws) instead; needs --group")


def load_config(path: str | None, overrides: Sequence[tuple[str, str]],
                profile_name: str = SERVE) -> ServerConfig:
    file_values = read_properties(path) if path else {}
    return ServerConfig.from_sources(profile(profile_name), file_values, dict(overrides))


def serve(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    app = prepare(args)
    if isinstance(app, int):
        return app
    log = get_logger("coordinator.cli")
    from coordinator.runtime.loop import loop_name
    from coordinator.runtime.loop import run as run_loop

    log.info("event loop", loop=loop_name())
    try:
        run_loop(app.run_until_stopped())
    except OSError as exc:
        log.error("cannot start", error=str(exc))
        return 1
    return 0


def prepare(args: argparse.Namespace) -> App | int:
    """What ``serve`` checks before it runs anything: every config value (Kafka's message and
    exit code 2 for a bad one), ``--add-scram``, the store's directory, the listeners' TLS and
    SASL settings. The server, built and not started, or the exit code."""
    log = get_logger("coordinator.cli")
    try:
        config = load_config(args.config, args.override, args.profile)
    except ConfigError as exc:
        log.error("invalid configuration", error=str(exc))
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        log.error("cannot read configuration", error=str(exc))
        print(f"error: cannot read {args.config}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for key in sorted(config.unknown):
        log.warning("unknown configuration key ignored", key=key)
    if args.profile != SERVE:
        log.info("config profile", profile=args.profile)
    from coordinator.metadata.meta_properties import MetaPropertiesError
    from coordinator.security.credentials import AddScramError, parse_add_scram

    from .app import App

    try:
        seeds = [parse_add_scram(text) for text in args.add_scram]
    except AddScramError as exc:
        log.error("invalid --add-scram", error=str(exc))
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        app = App(config, seeds)
    except ConfigError as exc:
        log.error("invalid configuration", error=str(exc))
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (MetaPropertiesError, OSError) as exc:
        log.error("cannot start", error=str(exc))
        print(f"error: cannot start: {exc}", file=sys.stderr)
        return 1
    return app


def dump_log(args: argparse.Namespace) -> int:
    from coordinator.metadata.log import METADATA_TOPIC
    from storage.dump import dump
    from storage.errors import CorruptLogError

    if not Path(args.log_dirs).is_dir():
        print(f"error: no such log directory: {args.log_dirs}", file=sys.stderr)
        return 2
    rows = (dump(args.log_dirs, 0, METADATA_TOPIC) if args.metadata
            else dump(args.log_dirs, args.partition))
    try:
        for row in rows:
            sys.stdout.write(json.dumps(row, default=str) + "\n")
    except BrokenPipeError:
        return 0
    except CorruptLogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def log_timeline(args: argparse.Namespace) -> int:
    from storage.errors import CorruptLogError

    from .groups.timeline_records import store_timeline

    if not Path(args.log_dir).is_dir():
        print(f"error: no such log directory: {args.log_dir}", file=sys.stderr)
        return 2
    if args.html is not None:
        return timeline_html(args)
    try:
        for event in store_timeline(args.log_dir, args.group):
            sys.stdout.write(json.dumps(event) + "\n")
    except BrokenPipeError:
        return 0
    except CorruptLogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def timeline_html(args: argparse.Namespace) -> int:
    from storage.errors import CorruptLogError

    from .control.page import offline_timeline
    from .groups.timeline_records import store_timeline

    if args.group is None:
        print("error: --html draws one group: give --group", file=sys.stderr)
        return 2
    try:
        events = list(store_timeline(args.log_dir, args.group))
    except CorruptLogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not events:
        print(f"error: the store has no record of group {args.group}", file=sys.stderr)
        return 1
    Path(args.html).write_text(offline_timeline(args.group, events), encoding="utf-8")
    print(json.dumps({"group": args.group, "events": len(events), "html": args.html}))
    return 0


def bench_assignor(args: argparse.Namespace) -> int:
    from assignors import bench as assignor_bench
    from storage.machine import KEY, machine_ns_per_op, with_machine

    if args.all:  # prints a line per case as it finishes
        assignor_bench.run_all(args.runs, {KEY: machine_ns_per_op()})
    else:
        print(json.dumps(with_machine(assignor_bench.run(args))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    named = {"bench": BENCHES, "soak": SOAKS}.get(command or "", {})
    sub = argv[1] if len(argv) > 1 and argv[1] in named else None
    args = build_parser(command, sub).parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "log":
        return log_timeline(args) if args.log_command == "timeline" else dump_log(args)
    if args.command == "soak":
        result: int = _module(SOAKS[args.soak][0]).run(args)
        return result
    if args.bench == "assignor":
        return bench_assignor(args)
    result = _module(BENCHES[args.bench][0]).run(args)
    return result
