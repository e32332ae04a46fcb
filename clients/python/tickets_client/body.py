"""A request body as the clients send it: one encoder for every route (client.py's and workers.py's)."""

from __future__ import annotations

import json
from typing import Any


def json_body(fields: dict[str, Any]) -> bytes:
    """A request body as UTF-8 JSON, non-ASCII text unescaped: escaped (`\\ud840\\udc00`), a character
    outside the BMP takes 12 bytes instead of 4, and the longest reason docs/reference/series.md allows would
    not fit the server's body limit. Text that is not valid Unicode (a lone surrogate) is refused here."""
    try:
        return json.dumps(fields, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"not valid Unicode text (a lone surrogate at {err.start}): {fields!r:.200}") from None
