import argparse

from tickets.settings import unserved

from ..operations import Outcome, key_lanes, raise_key
from ..registry import Command, Context, counter_key, say, whole_number
from ..table import AdminError

TEXT = """\
make every lane of KEY in this region next issue its smallest ticket above N

After a point-in-time restore: above the highest ticket issued before it. From another
counter: above its value plus a margin before pointing callers at Tickets, then again above
its final value once it has stopped (docs/how-to/restore.md, docs/how-to/migrate.md). It
never lowers a lane; it writes nothing if a stored lane disagrees with cdk.json or N is past
max. Exit status 1 if a lane needs a fix by hand. After a fence: the latest epoch's lanes.

examples:
  .venv/bin/python -m tickets_admin raise orders --above 120000
  .venv/bin/python -m tickets_admin raise orders --above 120000 --region eu-west-1 --table shop-tickets"""


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", type=counter_key, help="the counter")
    parser.add_argument("--above", required=True, metavar="N", type=whole_number, help="a whole number, 0 or more")


def _raise(args: argparse.Namespace, context: Context) -> int:
    table = context.counter_table()
    context.check_ledger()
    settings = context.settings()
    counter = settings.counter(args.key)
    if counter is None:
        raise AdminError(
            f"{args.key!r} is not configured: {unserved(args.key, str(context.config_file))}: add it to "
            "tickets.counters there first"
        )
    lanes = key_lanes(args.key, counter, settings.region_slot, settings.region_slots, context.ledger())
    epoch = f" (epoch {counter.epoch}, above its fence at {counter.fence})" if counter.epoch else ""
    say(
        f"raising {args.key}{epoch} above {args.above} in {context.region} (slot {settings.region_slot} of "
        f"{settings.region_slots}), table {table.table}: {len(lanes.current)} lane(s)"
    )
    return 1 if Outcome.OFF_LANE in raise_key(table, lanes, args.above, say) else 0


COMMANDS = (Command("raise", TEXT, _raise, _arguments),)
