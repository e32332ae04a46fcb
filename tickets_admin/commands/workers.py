import argparse
import datetime
import sys
import time

from tickets.tables import WORKERS_TABLE_SUFFIX
from tickets.workers.store import WorkerStore

from ..registry import Command, Context

TEXT = """\
print a worker pool's live leases

Each worker id, its epoch, its expiry by the service's clock (in how long, by this machine's)
and its owner, read as the service grants them (docs/how-to/worker-ids.md).

examples:
  .venv/bin/python -m tickets_admin workers snowflake"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pool", metavar="POOL", help="the pool, as cdk.json's tickets.workers names it")


def _workers(args: argparse.Namespace, context: Context) -> int:
    if (config := context.config.workers.get(args.pool)) is None:
        print(f"{args.pool!r} is not a pool of {context.config_file} (tickets.workers)", file=sys.stderr)
        return 1
    table = context.counter_table(WORKERS_TABLE_SUFFIX)
    now = int(time.time() * 1000)
    with table.dynamodb_errors():
        leases = WorkerStore(table.client, table.table).leases(args.pool, config.size, now)
    print(f"pool {args.pool}: {len(leases)} of {config.size} ids leased (ttl {config.ttl_seconds} s)")
    for lease in leases:
        expires = datetime.datetime.fromtimestamp(lease.expires_at / 1000, datetime.UTC).isoformat(timespec="seconds")
        left = (lease.expires_at - now) / 1000
        print(
            f"{lease.worker:>5}  epoch {lease.epoch:<6} expires {expires} (in {left:.0f} s)  owner {lease.owner or '-'}"
        )
    return 0


COMMANDS = (Command("workers", TEXT, _workers, _arguments),)
