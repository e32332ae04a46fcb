"""Tickets: unique, increasing integers for named counters."""

# The one place the release is written (pyproject.toml, `GET /_health` and --version read it).
__version__ = "0.3.0"
