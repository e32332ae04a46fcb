"""What issuing costs in DynamoDB calls, counted on the handler's own client: one conditional UpdateItem a request,
whatever its count, and nothing read; a sharded key's too, once its lanes' items exist (a range block's:
test_blocks.py). bench/README.md's figures rest on it."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("count", [1, 10, 1000])
def test_a_request_is_one_write_whatever_its_count(api, count):
    query = {"count": str(count)} if count > 1 else None
    first = api.get("/orders", query=query).body  # creates the key's item
    with api.dynamodb_calls() as calls:
        answers = [api.get("/orders", query=query).body for _ in range(3)]
    tickets = [ticket for answer in [first, *answers] for ticket in answer.get("tickets", [answer["ticket"]])]
    assert tickets == list(range(5000, 5000 + 4 * count))  # each request its count, after the one before
    assert [operation for operation, _ in calls] == ["UpdateItem"] * 3  # no reads, nothing else


def test_a_sharded_key_is_one_write_a_request_once_its_lanes_exist(deploy):
    api = deploy({"regions": {"us-east-1": 0}, "counters": {"hot": {"start": 1, "shards": 4}}})
    issued = []
    while len([item for item in api.items() if "#" in item["counter"]["S"]]) < 4:
        assert len(issued) < 200, api.items()
        issued.append(api.get("/hot").body["ticket"])
    with api.dynamodb_calls() as calls:
        issued += [api.get("/hot").body["ticket"] for _ in range(8)]
    assert [operation for operation, _ in calls] == ["UpdateItem"] * 8
    assert len(set(issued)) == len(issued)  # lanes interleave: distinct, not increasing
