"""Tickets as a CDK construct library: `TicketService` (the tables, the function and its URL) for any CDK
app, with `TicketAlarms` and `TicketDashboard` as opt-in parts. Any app that contains a TicketService is
checked against its deployment ledger (tickets.lock.json beside its cdk.json) when it synthesises;
`python -m tickets_cdk init` writes the first one. docs/how-to/use-the-construct.md shows how to use it.

The constructs are imported on first use, so `tickets_cdk.__version__` and `python -m tickets_cdk` do not
load aws_cdk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tickets import __version__

if TYPE_CHECKING:
    from .dashboard import TicketDashboard
    from .monitoring import TicketAlarms
    from .service import TicketService

__all__ = ["TicketAlarms", "TicketDashboard", "TicketService", "__version__"]

_LAZY = {"TicketService": "service", "TicketAlarms": "monitoring", "TicketDashboard": "dashboard"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
