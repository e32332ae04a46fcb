"""tickets_admin's commands: each is one `Command`, its arguments and its run function together, declared
beside the code it runs (tickets_admin/counter_commands.py, tickets_admin/journal.py). `main` builds one
subparser per command and runs the one chosen; every command is given the same `Context`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tickets_deploy.schema import DeploymentConfig


@dataclass(frozen=True)
class Context:
    """What every command is given: the parsed config, the region it operates in, and the options
    common to all commands."""

    config: DeploymentConfig
    config_file: Path
    region: str
    endpoint_url: str | None
    table: str | None  # --table: the counter table's name, when it is not the config's tableName
    from_ledger: bool = False  # --service: `config` is the ledger's own (config_file names the ledger)

    @property
    def table_name(self) -> str:
        return self.table or self.config.table_name


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A command with only the common options."""


@dataclass(frozen=True)
class Command:
    name: str
    help: str  # one line, for `.venv/bin/python -m tickets_admin --help`
    description: str
    epilog: str
    run: Callable[[argparse.Namespace, Context], int]
    arguments: Callable[[argparse.ArgumentParser], None] = field(default=_no_arguments)
    # False: the command works in one region, given as the common --region and --endpoint-url (the
    # Context's). True: on several regions' tables at once (fence), declaring its own, repeatable.
    several_regions: bool = False
    # False: works from the config alone (encode, decode), without a table: no --region nor --endpoint-url.
    uses_table: bool = True

    def add_to(
        self,
        commands: argparse._SubParsersAction[argparse.ArgumentParser],
        common: argparse.ArgumentParser,
        one_region: argparse.ArgumentParser,
    ) -> None:
        parser = commands.add_parser(
            self.name,
            parents=[common, one_region] if self.uses_table and not self.several_regions else [common],
            description=self.description,
            epilog=self.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            help=self.help,
        )
        self.arguments(parser)
        # _context reads --region and --endpoint-url only where the parser has them
        parser.set_defaults(run=self.run, several_regions=self.several_regions or not self.uses_table)
