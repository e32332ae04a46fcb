"""`python -m tickets_local`: the deployed handler behind a local Function URL (`make serve`)."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import signal
import sys
import time
from typing import Any

import tickets
from tickets_deploy.rules import ConfigError

from .deployment import ledger_refusal
from .engines import BACKENDS, DEFAULT_BACKEND, BackendError
from .server import LocalServer
from .testing import COUNTERS_PATH, OPENAPI_PATH, RESET_PATH

DESCRIPTION = f"""\
Serve Tickets locally: the deployed handler behind a local Lambda Function URL, with the settings
the stack derives from cdk.json for one region, on DynamoDB in memory unless --backend or
--endpoint-url names another. The server itself answers GET {OPENAPI_PATH} (this config's
API document) and GET {COUNTERS_PATH}. docs/reference/local-server.md says more."""

EPILOG = """\
examples (more in docs/reference/local-server.md and docs/reference/backends.md):
  python -m tickets_local                       # http://127.0.0.1:8000, DynamoDB in memory
  python -m tickets_local --backend moto --port 9000 --region us-east-1   # a region of cdk.json's tickets.regions
  python -m tickets_local --endpoint-url http://127.0.0.1:8001   # dynalite, DynamoDB Local, a moto server, ...
make serve passes PORT=, REGION=, BACKEND=, ENDPOINT_URL= and KEY_FILE= to the flags of the same names."""

# The flags, in --help's order: argparse's settings, (metavar, help), or a switch's help alone. LocalServer takes each
# value by the flag's name but for those main() reads itself (NOT_SERVED).
FLAGS: dict[str, dict[str, Any] | tuple[str, str] | str] = {
    "--port": {"type": int, "default": 8000, "help": "port to listen on (default: 8000; 0 picks a free one)"},
    "--host": {"default": "127.0.0.1", "help": "address to listen on (default: 127.0.0.1; no signature is checked)"},
    "--region": {"help": "a region of cdk.json's tickets.regions, whose slot decides the lane (default: the first)"},
    "--backend": {"choices": sorted(BACKENDS), "help": f"where the tables are (default: {DEFAULT_BACKEND})"},
    "--endpoint-url": ("URL", "a DynamoDB-compatible endpoint, for the endpoint backend; its tables persist"),
    "--config": {
        "dest": "config_path",
        "default": "cdk.json",
        "metavar": "PATH",
        "help": "the CDK config whose context.tickets to serve (default: cdk.json)",
    },
    "--config-json": ("JSON", "cdk.json's `tickets` object itself, in place of --config"),
    "--config-name": ("NAME", "what the answers call the config (default: the --config path)"),
    "--key-file": ("PATH", "the opaque counters' keys, made there if missing (default: a temporary key)"),
    "--new-key-file": "make a missing --key-file even though the table's opaque counters issued ids before keys' "
    "fingerprints were recorded",
    "--ledger": ("PATH", "the deployment ledger whose epochs to serve (default: tickets.lock.json beside --config)"),
    "--without-ledger": "on an endpoint, serve without a ledger (a deployment whose layouts never changed)",
    "--verbose": "also print the handler's INFO logs and its EMF metrics lines (each issuance's audit)",
    "--version": {"action": "version", "version": f"%(prog)s {tickets.__version__}"},
    # For a program that starts the server for its tests (tickets_local.testing, the Node helper):
    "--allow-reset": f"answer POST {RESET_PATH}: empty the tables and rebuild the handler's state",
    "--play-callers": "enforce the access rules, each request signed by the caller X-Tickets-Play-Caller names",
    "--reset-mark": ("FILE", "a file of one 8-byte counter: whenever it moved, a reset runs before the next request"),
    "--exit-with-stdin": "stop when standard input closes; a byte read there runs the reset --reset-mark marked",
}
NOT_SERVED = ("config_json", "config_name", "exit_with_stdin")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tickets_local",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for flag, settings in FLAGS.items():
        if isinstance(settings, tuple):
            settings = {"metavar": settings[0], "help": settings[1]}
        parser.add_argument(
            flag, **(settings if isinstance(settings, dict) else {"action": "store_true", "help": settings})
        )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # One line per request on stderr, by a handler of its own: Powertools filters the root's handlers.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
    log = logging.getLogger("tickets_local")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    for signum in (signal.SIGINT, signal.SIGTERM):  # both stop it cleanly, exit 0 (SIGINT too:
        signal.signal(signum, signal.default_int_handler)  # a shell may start background jobs ignoring it)
    server = None
    try:
        server = LocalServer(
            **{name: value for name, value in vars(args).items() if name not in NOT_SERVED},
            config=_config_json(args.config_json),
            config_name=args.config_name or (None if args.config_json is None else "the --config-json config"),
        ).start()
        # What start-up made lives as long as the process: frozen, the collector never scans it again (on moto,
        # 0.3 to 0.4 s of CPU less at every stop: tests start and stop dozens of servers).
        gc.freeze()
        print(banner(server), flush=True)
        refused = ledger_refusal(args.config_path, args.ledger) if args.config_json is None else None
        if refused is not None:
            same = "" if args.ledger else " (make synth says the same)"  # synthesis reads the ledger beside cdk.json
            print(
                f"warning: served as written, but synthesis would refuse it{same}:\n{refused}",
                file=sys.stderr,
                flush=True,
            )
        if args.exit_with_stdin:
            while os.read(sys.stdin.fileno(), 4096):  # a byte: the test kit marked a reset; run it now (reset_mark.py)
                with contextlib.suppress(Exception):  # if it fails, the next request runs it again, and answers why
                    server.between_invocations(lambda: None)
        else:
            while True:
                time.sleep(3600)  # until a signal
    except KeyboardInterrupt:
        pass
    except (ConfigError, BackendError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(
            f"error: cannot listen on {args.host}:{args.port}: {err.strerror or err}; "
            "pick another port with --port (make serve PORT=...)",
            file=sys.stderr,
        )
        return 1
    finally:
        if server is not None:
            server.stop()
    print("stopped", flush=True)
    return 0


def _config_json(text: str | None) -> Any:
    try:
        return None if text is None else json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--config-json: not valid JSON ({err})") from None


def banner(server: LocalServer) -> str:
    deployment, url = server.deployment, server.url
    return "\n".join(
        [
            "Tickets: the deployed handler behind a local Function URL",
            f"  url:      {url}",
            f"  backend:  {server.backend.description}",
            f"  region:   {deployment.region} (slot {deployment.slot} of {deployment.config.region_slots})",
            f"  tables:   {deployment.counter_table}, {deployment.idempotency_table}"
            + "".join(f", {table}" for table in (deployment.series_table, deployment.workers_table) if table),
            f"  ledger:   {server.layout.ledger_path if server.layout.ledger else 'none (layouts as written)'}",
            f"  try:      curl -s {url}/{next(iter(deployment.config.counters), '')}",  # else the default key
            *([f"  keys:     {server.keys.describe(server.backend.endpoint_url)}"] if server.keys is not None else []),
            f"  openapi:  {url}{OPENAPI_PATH}",
            f"  counters: {url}{COUNTERS_PATH}",
            "Ctrl-C stops it.",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
