"""An opaque counter served by the real handler on real Function URL events (moto): its answers are ids, never
tickets (JSON, text, the compatibility route), each the id of the ticket the counter issued; range blocks are
refused before any write; a retry gets the ids it was first given; a function that cannot read its keys answers 503
and writes nothing; the state says the key version and the versions held, never a key
(docs/explanation/opaque-ids.md)."""

from __future__ import annotations

import base64
import json
import re

import pytest

from moto_deployment import OPAQUE_KEYS, OPAQUE_KEYS_TEXT, Region
from opaque_statistics import luhn_valid
from tickets.access.store import RETRY_AFTER_FAILURE_SECONDS
from tickets.opaque import ALPHABETS, OpaqueConfig
from tickets.opaque.secret import StoredKeys
from tickets_deploy.opaque_decode import OpaqueCodec

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)

TEN_DIGITS = {"width": 10, "alphabet": "digits", "check": "luhn"}
CONFIG = {
    "regions": {"us-east-1": 0},
    "compat": {"path": "counter"},
    "counters": {
        "orders": {"start": 5000, "max": 99_999_999, "opaque": TEN_DIGITS},
        "codes": {"max": 10**9, "opaque": {"width": 8, "alphabet": "base32", "check": "luhn"}},
        "plain": {"start": 7},
    },
}


def decoded(ids: list[str], key: str = "orders", **opaque: object) -> list[tuple[int, int]]:
    """The (ticket, key version) of each id, decoded with the tests' keys as tickets_admin decodes them."""
    settings = OpaqueConfig.from_json({"keyVersions": 10, "keyVersion": 1, **TEN_DIGITS, **opaque})
    return [OpaqueCodec(settings, OPAQUE_KEYS, key).decode(each) for each in ids]


@pytest.fixture
def shop(deploy) -> Region:
    return deploy(CONFIG)


def test_an_opaque_counter_answers_the_ids_of_the_tickets_it_issues(shop):
    one = shop.get("/orders")
    assert one.status == 200
    assert set(one.body) == {"key", "id"} and one.body["key"] == "orders"
    three = shop.post("/orders", body=json.dumps({"count": 3}))
    assert set(three.body) == {"key", "id", "ids"} and three.body["id"] == three.body["ids"][0]
    made = [one.body["id"], *three.body["ids"]]
    assert all(re.fullmatch(r"[0-9]{10}", each) and luhn_valid(each, ALPHABETS["digits"]) for each in made)
    assert decoded(made) == [(5000, 1), (5001, 1), (5002, 1), (5003, 1)]  # the tickets issued, in order
    assert [item["last"] for item in shop.items() if item["counter"]["S"] == "orders"] == [{"N": "5003"}]


def test_the_text_and_compatibility_answers_are_the_ids(shop):
    text = shop.get("/orders", query={"count": "2"}, headers={"accept": "text/plain"})
    assert text.status == 200 and text.headers["Content-Type"].startswith("text/plain")
    lines = text.body.splitlines()
    assert text.body.endswith("\n") and len(lines) == 2
    bare = shop.get("/counter", query={"systemKey": "orders"})
    assert re.fullmatch(r"[0-9]{10}", bare.body)  # the bare id, no newline
    assert decoded([*lines, bare.body]) == [(5000, 1), (5001, 1), (5002, 1)]


def test_a_base32_counter_and_a_plain_one_beside_it(shop):
    codes = shop.get("/codes", query={"count": "2"}).body["ids"]
    assert all(re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{8}", each) for each in codes)
    base32 = {"width": 8, "alphabet": "base32", "check": "luhn"}
    assert decoded(codes, "codes", **base32) == [(1, 1), (2, 1)]
    assert shop.get("/plain").body == {"key": "plain", "ticket": 7}  # a plain counter answers as ever
    assert shop.get("/unconfigured").body == {"key": "unconfigured", "ticket": 1}


def test_range_blocks_of_an_opaque_counter_are_refused_before_any_write(shop):
    shop.get("/orders")
    before = shop.items()
    refused = shop.get("/_blocks/orders", query={"count": "10"})
    assert refused.status == 400 and refused.body["error"] == "opaque_counter"
    assert "a caller cannot encode them without the key" in refused.body["message"]
    assert "GET /orders?count=N" in refused.body["message"]  # the way out
    assert shop.items() == before
    assert shop.get("/_blocks/plain", query={"count": "10"}).status == 200  # other counters' blocks as ever


def test_a_retry_gets_the_ids_it_was_given_even_after_a_new_key_version(deploy):
    first = deploy(CONFIG)
    headers = {"Idempotency-Key": "order-7"}
    answer = first.post("/orders", headers=headers, query={"count": "2"})
    assert first.post("/orders", headers=headers, query={"count": "2"}).body == answer.body
    rotated = {**CONFIG, "counters": {**CONFIG["counters"]}}
    rotated["counters"]["orders"] = {**CONFIG["counters"]["orders"], "opaque": {**TEN_DIGITS, "keyVersion": 2}}
    later = deploy(rotated)  # the next deploy: key version 2, a new execution environment
    assert later.post("/orders", headers=headers, query={"count": "2"}).body == answer.body
    assert decoded([later.get("/orders").body["id"]]) == [(5002, 2)]  # new ids under the new version


def test_a_function_that_cannot_read_its_keys_answers_503_and_writes_nothing(deploy):
    broken = deploy(CONFIG)
    now = [0.0]

    def unreadable() -> str:
        raise RuntimeError("ParameterNotFound: /tickets/tickets/opaque-keys")

    broken.opaque_keys = StoredKeys(unreadable, "the SSM parameter /tickets/tickets/opaque-keys", clock=lambda: now[0])
    before = broken.items()
    for path, query in (("/orders", None), ("/orders", {"count": "5"}), ("/counter", {"systemKey": "orders"})):
        answer = broken.get(path, query=query)
        assert answer.status == 503 and answer.headers["Retry-After"] == "1"
        assert set(answer.body) == {"error", "message"}  # no ticket, no id
        assert not re.search(r"[0-9]{4,}", answer.body["message"])
        assert "python -m tickets_admin put-key" in answer.body["message"]
    assert broken.items() == before  # nothing issued: no ticket burned, none shown
    assert broken.get("/plain").status == 200  # only the opaque counters need the keys


def test_keys_that_arrive_later_are_read_again_within_seconds(deploy):
    region = deploy(CONFIG)
    now, written = [0.0], [""]
    region.opaque_keys = StoredKeys(lambda: written[0] or _missing(), "the parameter", clock=lambda: now[0])
    assert region.get("/orders").status == 503
    written[0] = OPAQUE_KEYS_TEXT  # the operator runs put-key
    assert region.get("/orders").status == 503  # read again at most every RETRY_AFTER_FAILURE_SECONDS
    now[0] += RETRY_AFTER_FAILURE_SECONDS
    assert decoded([region.get("/orders").body["id"]]) == [(5000, 1)]


def _missing() -> str:
    raise LookupError("ParameterNotFound")


def test_keys_without_the_counters_key_version_answer_503_naming_the_versions(deploy):
    settings = {**TEN_DIGITS, "keyVersion": 4}
    region = deploy({"regions": {"us-east-1": 0}, "counters": {"orders": {"max": 99_999_999, "opaque": settings}}})
    answer = region.get("/orders")
    assert answer.status == 503
    assert "hold key versions 1, 2, 3, not 4" in answer.body["message"]
    assert region.items() == []


def test_the_state_says_the_key_version_and_the_versions_held_never_a_key(shop):
    shop.get("/orders", query={"count": "3"})
    state = shop.get("/_counters/orders").body
    assert state["opaque"] == {"keyVersion": 1, "idsPerVersion": 100_000_000, "keyVersionsHeld": [1, 2, 3]}
    assert state["config"]["opaque"] == {**TEN_DIGITS, "keyVersion": 1, "keyVersions": 10}
    assert state["last"] == 5002  # a ticket: whoever may read the state may know the volume (documented)
    text = json.dumps(state)
    assert not any(base64.b64encode(key).decode() in text or key.hex() in text for key in OPAQUE_KEYS.values())
    shop.get("/plain")
    assert "opaque" not in shop.get("/_counters/plain").body


def test_the_state_of_a_function_that_cannot_read_its_keys_says_so(deploy):
    region = deploy(CONFIG)
    region.get("/orders")
    region.opaque_keys = StoredKeys(_missing, "the parameter")
    region._app = None  # a new execution environment, whose read fails
    assert region.get("/_counters/orders").body["opaque"]["keyVersionsHeld"] is None


def test_a_replaced_key_answers_503_naming_its_version_and_counts_it(deploy, capsys):
    """The first id of a version records its key's fingerprint (nothing of the key) in a reserved item; a function
    holding another key for that version (a parameter lost and made again) answers 503 naming the version, issues
    nothing, and counts it (Errors of code key_replaced; its alarm: tickets_cdk/monitoring.py). Another version still
    serves."""
    region = deploy(CONFIG)
    first = region.get("/orders").body["id"]
    [record] = [item for item in region.items() if item["counter"]["S"] == "_opaque-key#1"]
    assert set(record) == {"counter", "fingerprint"} and re.fullmatch(r"[0-9a-f]{32}", record["fingerprint"]["S"])
    assert not any(base64.b64encode(key).decode() in json.dumps(record) for key in OPAQUE_KEYS.values())
    other = {"1": base64.b64encode(bytes(range(100, 132))).decode(), "2": base64.b64encode(OPAQUE_KEYS[2]).decode()}
    region.opaque_keys = StoredKeys(lambda: json.dumps(other), "the SSM parameter /tickets/tickets/opaque-keys")
    region._app = None  # a new execution environment, with the recreated parameter
    before = region.items()
    capsys.readouterr()
    for path, query in (("/orders", None), ("/codes", {"count": "3"}), ("/counter", {"systemKey": "orders"})):
        answer = region.get(path, query=query)
        assert answer.status == 503 and answer.body["error"] == "key_replaced", answer.body
        assert answer.body["message"] == (
            "key version 1 in the SSM parameter /tickets/tickets/opaque-keys is not the key its first ids were made "
            "with: restore it"
        )
    assert region.items() == before  # nothing issued
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    metrics = [line for line in lines if "_aws" in line]
    assert [(line.get("Errors"), line["code"]) for line in metrics] == [([1.0], "key_replaced")] * 3
    rotated = {**CONFIG, "counters": {**CONFIG["counters"]}}
    rotated["counters"]["orders"] = {**CONFIG["counters"]["orders"], "opaque": {**TEN_DIGITS, "keyVersion": 2}}
    later = deploy(rotated)  # rotation: key version 2, whose first use records its own fingerprint
    later.opaque_keys = region.opaque_keys
    assert decoded([later.get("/orders").body["id"]], keyVersion=2) == [(5001, 2)]
    assert decoded([first]) == [(5000, 1)]
