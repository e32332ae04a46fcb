"""Worker-id leases (docs/explanation/worker-leases.md): config.py (a pool, the search for a free id), store.py (the
workers table's calls), routes.py (the handlers)."""

from .config import PoolConfig as PoolConfig
