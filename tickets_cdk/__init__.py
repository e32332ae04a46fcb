"""Tickets as a CDK construct library (docs/how-to/use-the-construct.md), its constructs imported on first use so
that `tickets_cdk.asset` (the bench's) does not start jsii; without the `cdk` extra, importing it says so."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from tickets import __version__

_MISSING = [name for name in ("aws_cdk", "constructs") if importlib.util.find_spec(name) is None]
if _MISSING:
    raise ModuleNotFoundError(
        f"tickets_cdk, the CDK construct library, needs aws-cdk-lib and constructs (no module {_MISSING[0]!r}), its "
        "`cdk` extra: pip install 'tickets-server[cdk]' (in a clone: pip install '/path/to/tickets[cdk]').",
        name=_MISSING[0],
    )

if TYPE_CHECKING:
    from .monitoring import TicketAlarms, TicketDashboard
    from .service import TicketService

__all__ = ["TicketAlarms", "TicketDashboard", "TicketService", "__version__"]

_LAZY = {"TicketService": "service", "TicketAlarms": "monitoring", "TicketDashboard": "monitoring"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
