"""The client's release number (pyproject.toml and `--version` read it), the server's too: the client cannot import
tickets.__version__ (tests/functional/test_listing.py checks they are equal)."""

__version__ = "0.3.0"
