"""The client's release number: the package's metadata (clients/python/pyproject.toml) and `--version` read
it here. The client installs without the server, so it cannot import tickets.__version__; the two are
released together, and tests/functional/test_listing.py checks they are equal."""

__version__ = "0.3.0"
