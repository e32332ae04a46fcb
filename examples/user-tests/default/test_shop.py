"""A user's suite with no conftest.py: the plugin's fixtures as installed, the default config, and the
team's own mock_aws for S3 in the same process as the local server's client."""

from __future__ import annotations

import json
import os

import boto3
import pytest
from moto import mock_aws
from shop import place_order

# The environment before any fixture ran (modules are imported at collection, before the session's
# first fixture): the server must change nothing in it. pytest itself sets PYTEST_CURRENT_TEST.
ENVIRONMENT_AT_COLLECTION = {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}


class ReachedTheNetwork(Exception):
    """Raised where botocore would send a request to AWS."""


@pytest.fixture
def s3():
    """The team's own moto, for its own bucket."""
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="shop-orders")
        yield client


def test_an_order_is_numbered_by_tickets_and_stored_in_s3(tickets_fresh_client, s3):
    first = place_order(tickets_fresh_client, s3, "shop-orders", "tea")
    second = place_order(tickets_fresh_client, s3, "shop-orders", "cake")

    assert (first, second) == (1, 2)  # the default config: every key starts at 1, one lane
    stored = s3.get_object(Bucket="shop-orders", Key="orders/2.json")["Body"].read()
    assert json.loads(stored) == {"number": 2, "item": "cake"}


def test_reset_starts_every_counter_again_and_forgets_idempotency_keys(tickets_server, tickets_client):
    tickets_client.next("orders", count=5)
    tickets_client.next("a-key-of-this-test")
    tickets_server.reset()

    assert tickets_client.next("orders") == [1]
    assert tickets_client.next("a-key-of-this-test") == [1]


def test_a_key_per_test_needs_no_reset(tickets_client, request):
    key = request.node.name  # a key no other test uses: its tickets start at 1 whatever ran before
    assert tickets_client.next(key, count=3) == [1, 2, 3]


def test_my_mock_aws_sees_none_of_the_servers_tables(tickets_client, s3):
    tickets_client.next("orders")  # the server runs, its tables hold a counter
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")

    assert dynamodb.list_tables()["TableNames"] == []
    assert [bucket["Name"] for bucket in s3.list_buckets()["Buckets"]] == ["shop-orders"]


def test_outside_my_mock_aws_botocore_is_not_patched(tickets_client):
    tickets_client.next("orders")
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="made-under-my-mock")
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")

    def send(request: object) -> None:
        raise ReachedTheNetwork

    # botocore sends a request over HTTP only when no event handler answered it; moto's, when a mock_aws
    # is active anywhere in the process, would answer with the bucket made above.
    s3._endpoint.http_session.send = send
    with pytest.raises(ReachedTheNetwork):
        s3.list_buckets()


def test_each_test_of_the_fresh_server_starts_from_empty_counters(tickets_fresh_server, tickets_client):
    assert tickets_client.next("orders", count=2) == [1, 2]  # whichever test of this module ran before


def test_the_fresh_client_is_the_servers_client_after_a_reset(tickets_fresh_client, tickets_client, tickets_server):
    assert tickets_fresh_client is tickets_client and tickets_client.url == tickets_server.url
    assert tickets_fresh_client.next("orders", count=2) == [1, 2]  # whichever test of this module ran before


def test_the_server_changed_nothing_in_my_environment(tickets_server):
    assert tickets_server.url.startswith("http://127.0.0.1:")
    now = {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}
    assert now == ENVIRONMENT_AT_COLLECTION
