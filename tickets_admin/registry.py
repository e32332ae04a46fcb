"""tickets_admin's commands: each module of tickets_admin/commands/ declares its `COMMANDS`, which `find_commands`
finds; every command is given the same `Context`; the argument types and output they share."""

import argparse
import functools
import importlib
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tickets.keys import KEY_RULE, is_valid_key
from tickets.settings import Settings
from tickets_deploy.environment import region_settings
from tickets_deploy.ledger import LEDGER_FILE, Ledger, applied, check_config_file, ledger_path_beside, read_ledger_file
from tickets_deploy.schema import DeploymentConfig

from . import commands
from .table import REGION_NAMED_BY, CounterTable


@dataclass(frozen=True)
class Context:
    config: DeploymentConfig
    config_file: Path
    region: str
    endpoint_url: str | None
    table_name: str  # --table, or the config's
    from_ledger: bool = False  # --service: `config` is the ledger's own (config_file names the ledger)

    def counter_table(self, suffix: str = "") -> CounterTable:
        named_by = f"--table (the {suffix[1:]} table is NAME{suffix}) and {REGION_NAMED_BY}" if suffix else ""
        return CounterTable(self.table_name + suffix, self.region, self.endpoint_url, named_by)

    def ledger_path(self) -> Path:
        return self.config_file if self.from_ledger else ledger_path_beside(self.config_file)

    @functools.cached_property  # read once a command: raise and migrate ask for it and for the settings
    def ledger(self) -> Ledger | None:
        path = self.ledger_path()
        return read_ledger_file(path).services.get(self.config.table_name) if path.exists() else None

    def settings(self) -> Settings:
        """The region's settings as its function runs them: a key whose layout changed serves its latest epoch."""
        return region_settings(applied(self.config, self.ledger), self.region)

    def check_ledger(self) -> None:
        """Refuse a config the ledger refuses, as synthesis does; only a local endpoint may go without a ledger."""
        if self.endpoint_url is not None and not self.ledger_path().exists():  # --service's always exists
            print(f"note: no {LEDGER_FILE} beside {self.config_file}: layouts unchecked", file=sys.stderr)
        elif not self.from_ledger:
            check_config_file(self.config_file, self.config)


@dataclass(frozen=True)
class Command:
    name: str
    text: str  # its --help, `examples:` last; its first line and first example also stand in `tickets_admin --help`
    run: Callable[[argparse.Namespace, Context], int]
    arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None
    one_region: bool = True  # False: no --region nor --endpoint-url (fence has its own, put-key writes every region)

    @property
    def help(self) -> str:
        return self.text.partition("\n")[0]


def find_commands() -> list[Command]:
    found = pkgutil.iter_modules(commands.__path__)
    modules = [importlib.import_module(f"{commands.__name__}.{each.name}") for each in found]
    return sorted((command for module in modules for command in module.COMMANDS), key=lambda command: command.name)


def counter_key(text: str) -> str:
    if not is_valid_key(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid key ({KEY_RULE})")
    return text


def whole_number(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (0 or more, digits only)")
    return int(text)


def say(line: str) -> None:
    """Print a line at once: an error that follows (on stderr) comes after it."""
    print(line, flush=True)
