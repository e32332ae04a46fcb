"""The client's release number, the server's too (tests/functional/test_listing.py holds the two equal)."""

__version__ = "0.3.0"
