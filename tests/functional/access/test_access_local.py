"""Playing a caller locally (docs/how-to/access-rules.md#test-your-403s-locally): the local server started to play
callers enforces the config's access rules for the caller a client names; one that was not started to
refuses a request naming one; the deployed function decides from the event's IAM context only."""

from __future__ import annotations

import pytest

from local_support import call
from tickets_client import TicketsClient, TicketsError
from tickets_client.client import PLAY_CALLER_HEADER
from tickets_local.events import PLAY_CALLER_HEADER as SERVER_HEADER
from tickets_local.events import PlayedCallerError, played_caller
from tickets_local.server import LocalServer

ORDERS_ROLE = "arn:aws:iam::111122223333:role/teams/orders-service"
CONFIG = {
    "regions": {"us-east-1": 0},
    "access": {ORDERS_ROLE: {"issue": ["orders", "orders-*"]}, "o-a1b2c3d4e5": {"read": ["*"]}},
}


@pytest.fixture(scope="module")
def playing():
    with LocalServer(config=CONFIG, play_callers=True) as server:
        yield server


def test_the_client_s_header_is_the_server_s():
    assert PLAY_CALLER_HEADER.lower() == SERVER_HEADER


def test_a_team_sees_its_own_403s_through_the_client(playing):
    orders = TicketsClient(playing.url, play_caller=ORDERS_ROLE, max_attempts=1)
    assert orders.next("orders-eu") == [1]
    with pytest.raises(TicketsError) as refused:
        orders.next("invoices")
    assert refused.value.status == 403 and refused.value.code == "forbidden"
    assert "may not issue key 'invoices'" in str(refused.value)
    # A session of the role, the organization, and nobody at all.
    session = TicketsClient(playing.url, play_caller="arn:aws:sts::111122223333:assumed-role/orders-service/t1")
    assert session.next("orders") == [1]
    with pytest.raises(TicketsError, match="forbidden"):
        TicketsClient(playing.url, play_caller="o-a1b2c3d4e5", max_attempts=1).next("orders")
    with pytest.raises(TicketsError, match="forbidden"):
        TicketsClient(playing.url, max_attempts=1).next("orders")  # unsigned: no rule names it


def test_a_server_not_started_to_play_callers_refuses_a_request_naming_one_and_enforces_nothing():
    with LocalServer(config=CONFIG) as server:
        assert TicketsClient(server.url).next("invoices") == [1]  # no request is signed here: no rules
        with pytest.raises(TicketsError) as refused:
            TicketsClient(server.url, play_caller=ORDERS_ROLE, max_attempts=1).next("orders")
        assert refused.value.status == 400 and "--play-callers" in str(refused.value)


def test_a_caller_that_cannot_be_played_is_refused():
    with pytest.raises(PlayedCallerError, match="cannot play"):
        played_caller("arn:aws:iam::111122223333:group/admins")
    assert played_caller(ORDERS_ROLE)["userArn"] == "arn:aws:sts::111122223333:assumed-role/orders-service/local"


def test_the_deployed_function_ignores_the_header(deploy):
    api = deploy(CONFIG)
    other = {"accountId": "444455556666", "userArn": "arn:aws:sts::444455556666:assumed-role/x/y"}
    answer = api.get("/orders", headers={SERVER_HEADER: ORDERS_ROLE}, iam=other)
    assert answer.status == 403 and answer.body["error"] == "forbidden"


# Two of each principal kind a test can play, and a session of one of the roles.
PLAYED = (
    "111122223333",
    "444455556666",
    "o-a1b2c3d4e5",
    "o-zzzzzzzzzz",
    "arn:aws:iam::111122223333:user/alice",
    "arn:aws:iam::111122223333:user/bob",
    "arn:aws:iam::111122223333:role/teams/orders-service",
    "arn:aws:iam::111122223333:role/billing",
)


def test_played_callers_never_share_an_idempotency_record():
    """The deployed function scopes an Idempotency-Key's record by its signer (access.rules.caller): two accounts,
    organizations, users or roles that pick the same header get a ticket each. Played locally, over real HTTP,
    the same: each played principal is a signer of its own. A repeat is a replay, and a role's other session is
    the role, as deployed."""
    header = {"Idempotency-Key": "same-for-everyone"}
    with LocalServer(config={"regions": {"us-east-1": 0}}, play_callers=True) as server:

        def ticket(principal: str) -> int:
            reply = call(server.url, "/idempotent", method="POST", headers={**header, SERVER_HEADER: principal})
            assert reply.status == 200, reply
            return int(reply.json()["ticket"])

        first = {principal: ticket(principal) for principal in PLAYED}
        assert len(set(first.values())) == len(PLAYED)  # one ticket each
        assert {principal: ticket(principal) for principal in PLAYED} == first
        session = "arn:aws:sts::111122223333:assumed-role/orders-service/another-session"
        assert ticket(session) == first["arn:aws:iam::111122223333:role/teams/orders-service"]


def test_a_played_account_or_organization_is_a_well_formed_signer_that_its_rules_name():
    """Each played principal is what an IAM authorizer says of a real signer (the function names no other in a
    rule: tests/functional/test_authorizer.py): an account rule names its played account, an organization rule
    its played organization, and nobody else."""
    config = {
        "regions": {"us-east-1": 0},
        "access": {"444455556666": {"issue": ["a"]}, "o-zzzzzzzzzz": {"issue": ["b"]}},
    }
    with LocalServer(config=config, play_callers=True) as server:
        status = {
            (principal, key): call(server.url, f"/{key}", method="POST", headers={SERVER_HEADER: principal}).status
            for principal in ("444455556666", "o-zzzzzzzzzz", "111122223333")
            for key in ("a", "b")
        }
    assert status == {
        ("444455556666", "a"): 200,
        ("444455556666", "b"): 403,
        ("o-zzzzzzzzzz", "a"): 403,
        ("o-zzzzzzzzzz", "b"): 200,
        ("111122223333", "a"): 403,
        ("111122223333", "b"): 403,
    }


def test_the_servers_list_of_counters_follows_the_played_callers_read_rules():
    """GET /_local/counters on a server that plays callers lists only the keys the caller may read (as GET
    /_counters/{key} would answer it): the organization reads every key, the orders role none, nobody none; a
    caller that cannot be played is a 400."""
    with LocalServer(config=CONFIG, play_callers=True) as server:
        TicketsClient(server.url, play_caller=ORDERS_ROLE).next("orders")
        TicketsClient(server.url, play_caller=ORDERS_ROLE).next("orders-eu")

        def listed(**headers: str) -> list[str]:
            answer = call(server.url, "/_local/counters", headers=headers)
            assert answer.status == 200, answer.body
            return [each["key"] for each in answer.json()["counters"]]

        assert {"orders", "orders-eu"} <= set(listed(**{SERVER_HEADER: "o-a1b2c3d4e5"}))  # moto is the process'

        assert listed(**{SERVER_HEADER: ORDERS_ROLE}) == [] and listed() == []
        refused = call(server.url, "/_local/counters", headers={SERVER_HEADER: "someone"})
        assert refused.status == 400 and "cannot play" in refused.json()["message"]
    with LocalServer(config=CONFIG) as server:  # no caller played, no rule enforced: every counter
        TicketsClient(server.url).next("invoices")
        assert "invoices" in [each["key"] for each in call(server.url, "/_local/counters").json()["counters"]]
