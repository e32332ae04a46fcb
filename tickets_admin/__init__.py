"""`.venv/bin/python -m tickets_admin`: the operator's commands on a deployment's counter table (raise, export)."""
