"""``python -m coordinator``: serve, bench, log dump."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from .config import ConfigError, ServerConfig
from .config.properties import read_properties
from .logs import configure_logging, get_logger


def _parse_override(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m coordinator",
                                     description="A Kafka group coordinator you can run on your "
                                     "laptop.")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the server")
    serve.add_argument("--config", help="a server.properties file")
    serve.add_argument("--override", action="append", default=[], type=_parse_override,
                       metavar="KEY=VALUE", help="set a config, after the file (repeatable)")
    serve.add_argument("--log-level", default="INFO")

    bench = commands.add_parser("bench", help="benchmarks that print numbers")
    benches = bench.add_subparsers(dest="bench", required=True)
    codec = benches.add_parser("codec", help="µs per decode/encode of hot messages")
    codec.add_argument("--iterations", type=int, default=20000)
    return parser


def load_config(path: str | None, overrides: Sequence[tuple[str, str]]) -> ServerConfig:
    file_values = read_properties(path) if path else {}
    return ServerConfig.from_sources(file_values, dict(overrides))


def serve(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    log = get_logger("coordinator.cli")
    try:
        config = load_config(args.config, args.override)
    except ConfigError as exc:
        log.error("invalid configuration", error=str(exc))
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        log.error("cannot read configuration", error=str(exc))
        return 2
    for key in sorted(config.unknown):
        log.warning("unknown configuration key ignored", key=key)
    from .app import App
    from .meta_properties import MetaPropertiesError

    try:
        app = App(config)
    except (MetaPropertiesError, OSError) as exc:
        log.error("cannot start", error=str(exc))
        return 1
    try:
        asyncio.run(app.run_until_stopped())
    except OSError as exc:
        log.error("cannot start", error=str(exc))
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "bench" and args.bench == "codec":
        from .bench.codec import run

        return run(args)
    return 2
