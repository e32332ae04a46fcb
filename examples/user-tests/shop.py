"""The code under test: a shop whose order numbers come from Tickets and whose orders go to S3."""

from __future__ import annotations

import json
from typing import Any


def place_order(tickets: Any, s3: Any, bucket: str, item: str) -> int:
    """Number the order with the next ticket of `orders` and store it as orders/{number}.json."""
    [number] = tickets.next("orders")
    s3.put_object(Bucket=bucket, Key=f"orders/{number}.json", Body=json.dumps({"number": number, "item": item}))
    return number
