"""The `tickets_admin` commands: a module a feature, each declaring its `COMMANDS` (tickets_admin/registry.py)."""
