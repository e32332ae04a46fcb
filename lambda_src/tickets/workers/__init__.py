"""Worker-id leases (docs/explanation/worker-leases.md): small integers no two live processes hold at once.

A plain feature folder: config.py (a pool's config, the search for a free id: plain logic), store.py (the one
place that talks to the workers table) and routes.py (the handlers)."""

from .config import PoolConfig

__all__ = ["PoolConfig"]
