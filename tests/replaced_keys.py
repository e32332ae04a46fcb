"""A key replaced, for the models (tests/models/test_rollout_model.py, test_team_model.py): an opaque counter, CODES,
beside their keys; a region's keys' parameter lost and made again (another key for version 1, in a new execution
environment); and its ids taken, each never issued before, or refused 503 key_replaced where a key was replaced
(docs/explanation/opaque-ids.md#a-key-is-what-it-was)."""

from __future__ import annotations

import base64
import json
import random

from moto_deployment import Region
from tickets.opaque.secret import StoredKeys

CODES = {"max": 99_999_999, "opaque": {"width": 10, "alphabet": "digits", "check": "luhn"}}


class ReplacedKeys:
    def __init__(self) -> None:
        self.keys: dict[str, str] = {}  # region -> its keys' text, once replaced
        self.ids: dict[str, str] = {}  # every id issued -> the region that issued it

    def replace(self, region: str, seed: int) -> None:
        self.keys[region] = json.dumps({"1": base64.b64encode(random.Random(seed).randbytes(32)).decode()})

    def give(self, handler: Region, region: str) -> Region:
        """`handler` (a new execution environment) with the region's keys as they are now."""
        if region in self.keys:
            handler.opaque_keys = StoredKeys(lambda: self.keys[region], "its parameter")
        return handler

    def take(self, handler: Region, region: str, count: int) -> None:
        answer = handler.get("/codes", query={"count": count})
        if answer.status != 200:
            assert (answer.status, answer.body["error"]) == (503, "key_replaced") and region in self.keys, answer
            return
        for made in answer.body.get("ids", [answer.body["id"]]):
            assert made not in self.ids, f"id {made} issued twice: by {self.ids[made]} and by {region}"
            self.ids[made] = region
