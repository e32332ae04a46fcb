"""Worker-id leases (docs/explanation/worker-leases.md)."""

from .config import PoolConfig as PoolConfig
