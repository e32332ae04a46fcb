"""One module per `tickets_admin` command, each declaring its `COMMAND` (tickets_admin/registry.py finds them)."""
