"""The keys of a deployed service's opaque ids (docs/how-to/opaque-order-numbers.md), on moto's SSM: `python -m
tickets_admin put-key` makes every region's SecureString parameter hold the same keys, never changing a version's key,
finishing a run that stopped half-way, refusing regions that disagree before writing; encode and decode read them
without a key file; the function reads them (tickets.opaque.secret.read_secret); and no key is ever printed, logged or
put in an error, botocore's DEBUG lines included."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import os
import subprocess
import sys

import boto3
import pytest

from access_support import closed_port_url, error_answer, ssm_stub
from functional.access.test_access_store import CHILD
from local_support import write_cdk_json
from moto_deployment import function_url_event
from tickets import timing
from tickets.access.store import ssm_client
from tickets.errors import Unavailable
from tickets.opaque import parse_keys
from tickets.opaque.secret import fingerprint, parameter_keys, read_secret
from tickets.settings import OPAQUE_KEYS_ENV
from tickets.store import CounterStore
from tickets.tables import COUNTER_KEY, create_table_arguments
from tickets_admin.__main__ import main
from tickets_deploy.config import parse_config
from tickets_deploy.environment import handler_environment

TABLE = "shop"
PARAMETER = f"/tickets/{TABLE}/opaque-keys"
REGIONS = ("eu-west-1", "us-east-1")
TICKETS = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "strictKeys": True,
    "tableName": "shop",
    "counters": {"orders": {"max": 99_999_999, "opaque": {"width": 10, "alphabet": "digits", "check": "luhn"}}},
}


@pytest.fixture
def admin(tmp_path, aws):
    """admin(*args, tickets=TICKETS) runs `python -m tickets_admin` in-process on moto: (status, stdout, stderr)."""

    def run(*args: str, tickets: dict = TICKETS) -> tuple[int, str, str]:
        config = write_cdk_json(tmp_path, tickets)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([*args, "--config", str(config)])
        return status, out.getvalue(), err.getvalue()

    return run


def stored(region: str) -> dict[int, bytes] | None:
    ssm = boto3.client("ssm", region_name=region)
    try:
        return parse_keys(ssm.get_parameter(Name=PARAMETER, WithDecryption=True)["Parameter"]["Value"])
    except ssm.exceptions.ParameterNotFound:
        return None


def secrets_in(text: str, *keys: dict[int, bytes] | None) -> list[str]:
    """Every way a key could show in `text`: its base64 (as stored), its hex, the bytes themselves."""
    found = []
    for held in keys:
        for key in (held or {}).values():
            found += [form for form in (base64.b64encode(key).decode(), key.hex(), repr(key)) if form in text]
    return found


def test_put_key_gives_every_region_one_new_key_and_prints_none(admin):
    status, out, err = admin("put-key")
    assert status == 0, err
    assert out.splitlines() == [
        f"eu-west-1: {PARAMETER} now holds key versions 1",
        f"us-east-1: {PARAMETER} now holds key versions 1",
        "new: key version(s) 1, 32 random bytes each (never printed)",
    ]
    keys = stored("us-east-1")
    assert keys is not None and stored("eu-west-1") == keys and len(keys[1]) == 32
    described = boto3.client("ssm", region_name="us-east-1").describe_parameters()["Parameters"]
    assert [(each["Name"], each["Type"]) for each in described] == [(PARAMETER, "SecureString")]
    assert secrets_in(out + err, keys) == []
    assert admin("put-key")[1].splitlines() == [
        f"eu-west-1: {PARAMETER} holds key versions 1: unchanged",
        f"us-east-1: {PARAMETER} holds key versions 1: unchanged",
    ]
    assert stored("us-east-1") == keys


def test_a_new_key_version_is_added_beside_the_old_which_never_changes(admin):
    admin("put-key")
    before = stored("us-east-1")
    rotated = json.loads(json.dumps(TICKETS))
    rotated["counters"]["orders"]["opaque"]["keyVersion"] = 2
    status, out, _ = admin("put-key", tickets=rotated)  # the rotation: keyVersion raised, then put-key
    assert status == 0 and out.splitlines()[-1] == "new: key version(s) 2, 32 random bytes each (never printed)"
    after = stored("us-east-1")
    assert after is not None and before is not None and after[1] == before[1] and set(after) == {1, 2}
    assert stored("eu-west-1") == after
    assert admin("put-key", "--version", "3")[0] == 0 and set(stored("eu-west-1") or {}) == {1, 2, 3}


def test_a_run_that_stopped_half_way_is_finished_with_the_keys_it_made(admin):
    """A run wrote one region and failed before the other: the next one copies that region's keys, never new ones
    for the same version (two keys for one version would let two regions' ids meet)."""
    admin("put-key")
    written = stored("us-east-1")
    boto3.client("ssm", region_name="eu-west-1").delete_parameter(Name=PARAMETER)
    status, out, _ = admin("put-key")
    assert status == 0 and "new:" not in out
    assert stored("eu-west-1") == written


def test_regions_that_disagree_on_a_version_are_refused_before_any_write(admin):
    for region, key in (("us-east-1", bytes(32)), ("eu-west-1", bytes(range(32)))):
        value = json.dumps({"1": base64.b64encode(key).decode()})
        boto3.client("ssm", region_name=region).put_parameter(Name=PARAMETER, Value=value, Type="SecureString")
    rotated = json.loads(json.dumps(TICKETS))
    rotated["counters"]["orders"]["opaque"]["keyVersion"] = 2
    status, out, err = admin("put-key", tickets=rotated)
    assert (status, out) == (1, "")
    assert "key version 1 differs between eu-west-1 and us-east-1" in err and "Nothing was written" in err
    assert set(stored("us-east-1") or {}) == {1}  # version 2 made nowhere
    assert secrets_in(err, stored("us-east-1"), stored("eu-west-1")) == []


def test_the_encryption_key_is_given_or_kept(admin):
    admin("put-key", "--kms-key-id", "alias/shop-tickets")
    admin("put-key", "--version", "2")  # rewritten without --kms-key-id: the parameter keeps its key
    for region in REGIONS:
        described = boto3.client("ssm", region_name=region).describe_parameters()["Parameters"]
        assert described[0]["KeyId"] == "alias/shop-tickets"


@pytest.mark.parametrize(
    ("args", "tickets", "says"),
    [
        (("put-key",), {**TICKETS, "counters": {"plain": {}}}, "no counter of "),
        (("put-key", "--version", "11"), TICKETS, "--version 11: the counters' ids have key versions 1 to 10"),
        (("put-key", "--version", "0"), TICKETS, "--version 0: the counters' ids have key versions 1 to 10"),
    ],
)
def test_put_key_refusals(admin, args, tickets, says):
    status, out, err = admin(*args, tickets=tickets)
    assert (status, out) == (1, "") and says in err, err
    assert stored("us-east-1") is None


def test_encode_and_decode_read_the_services_parameter_without_a_key_file(admin):
    for region in REGIONS:  # the service's tables, where the keys' fingerprints are recorded
        boto3.client("dynamodb", region_name=region).create_table(**create_table_arguments(TABLE, COUNTER_KEY))
    status, _, err = admin("encode", "orders", "5000")
    assert status == 1 and f"{PARAMETER} does not exist in us-east-1" in err and "put-key" in err
    admin("put-key")
    status, out, _ = admin("encode", "orders", "5000", "--region", "eu-west-1")
    assert status == 0
    made = out.split()[2]
    assert admin("decode", "orders", made)[1] == f"{made} -> ticket 5000 (key version 1)\n"
    assert secrets_in(out, stored("us-east-1")) == []
    # A function in eu-west-1 recorded another key for version 1 (a parameter lost and made again there): both
    # commands refuse that region's ids, naming the version.
    other = check_key_with(bytes(range(100, 132)), "eu-west-1")
    for command in (("encode", "orders", "5000"), ("decode", "orders", made)):
        status, _, err = admin(*command, "--region", "eu-west-1")
        assert status == 1 and "key version 1 in the service's parameter is not the key its first ids were" in err, err
    assert other not in err


def check_key_with(key: bytes, region: str) -> str:
    """What a function holding `key` for version 1 records at its first id (tickets/opaque/secret.py)."""
    CounterStore(boto3.client("dynamodb", region_name=region), TABLE).fingerprint(1, fingerprint(key))
    return fingerprint(key)


class _Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {self.format(record)}")


@contextlib.contextmanager
def every_log_line():
    """Every logger at DEBUG (botocore's too, as a function whose log level is set to DEBUG has it) into a list."""
    root, handler = logging.getLogger(), _Everything()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_no_key_reaches_a_log_line_even_at_debug(admin):
    """botocore logs a call's parameters and its answer's body at DEBUG: the one read of the function and the
    admin's reads and writes keep the secret out of them, and the same read outside them shows it (so the check
    can see a key when one is there)."""
    with every_log_line() as lines:
        admin("put-key")
        keys = parse_keys(read_secret(PARAMETER))
        admin("decode", "orders", "8752842271")
        admin("put-key", "--version", "2")
    after = stored("us-east-1")  # version 2 added since the function's read
    assert after is not None and set(keys) == {1} and after[1] == keys[1] and set(after) == {1, 2}
    assert len(lines) > 100 and any("botocore.endpoint" in line or "Response headers" in line for line in lines)
    leaked = [line for line in lines if secrets_in(line, after)]
    assert leaked == []
    with every_log_line() as lines:
        boto3.client("ssm", region_name="us-east-1").get_parameter(Name=PARAMETER, WithDecryption=True)
    assert secrets_in("\n".join(lines), keys) != []


# --- the function's read at cold start, on a stand-in for SSM (throttling, faults and refusals moto does not make) --

SSM_ERRORS = [
    (400, "ThrottlingException", True),
    (500, "InternalServerError", True),
    (400, "AccessDeniedException", False),
    (400, "ParameterNotFound", False),
]


@pytest.mark.parametrize("status, code, transient", SSM_ERRORS)
def test_the_keys_cold_start_read_asks_again_once_after_a_transient_failure_only(status, code, transient):
    """As the access rules' read (StoredValue.read_at_cold_start, the one SSM read at cold start): a transient
    failure is tried once more after a pause of at most SSM_RETRY_PAUSE_SECONDS, any other is not; either way the
    failure is kept, and a request at once is a 503 that names it and asks SSM nothing more."""
    pauses: list[float] = []
    with ssm_stub(error_answer(status, code, "no")) as stub:
        keys = parameter_keys(PARAMETER, ssm_client(endpoint_url=stub.url), pause=pauses.append)
        with pytest.raises(
            Unavailable, match=rf"cannot read the keys of its opaque ids \(\w+: An error occurred \({code}"
        ):
            keys.keys(1)
    assert len(stub.seen) == (timing.SSM_COLD_START_ATTEMPTS if transient else 1)
    assert all(seen.body == {"Name": PARAMETER, "WithDecryption": True} for seen in stub.seen)
    assert len(pauses) == len(stub.seen) - 1 and all(0 <= p <= timing.SSM_RETRY_PAUSE_SECONDS for p in pauses)


def test_a_cold_start_whose_second_attempt_reads_the_keys_serves_them():
    text = json.dumps({"1": base64.b64encode(bytes(32)).decode()})
    throttled = iter([(400, {"__type": "ThrottlingException", "message": "Rate exceeded"})])
    value = {"Parameter": {"Name": PARAMETER, "Type": "SecureString", "Value": text, "Version": 1}}
    with ssm_stub(lambda seen: next(throttled, None) or (200, value)) as stub:
        keys = parameter_keys(PARAMETER, ssm_client(endpoint_url=stub.url), pause=lambda seconds: None)
        assert keys.keys(1) == {1: bytes(32)} and keys.held() == [1]
    assert len(stub.seen) == 2


def test_the_entry_point_reads_the_keys_once_at_cold_start_with_its_one_session():
    """tickets.handler imported in a new process with an opaque counter's environment (as test_access_store's entry
    point tests do; DynamoDB where nothing listens): one GetParameter, decrypted, at import after a throttled one,
    none in the requests; the requests then fail at the counter table, past the keys (their 503 would name them)."""
    opaque = {"width": 10, "alphabet": "digits", "check": "luhn"}
    config = parse_config({"regions": {"us-east-1": 0}, "counters": {"orders": {"max": 99_999_999, "opaque": opaque}}})
    environment = handler_environment(config, "us-east-1", counter_table="t", idempotency_table="t-idempotency")
    name, text = environment[OPAQUE_KEYS_ENV], json.dumps({"1": base64.b64encode(bytes(32)).decode()})
    throttled = iter([(400, {"__type": "ThrottlingException", "message": "Rate exceeded"})])
    value = {"Parameter": {"Name": name, "Type": "SecureString", "Value": text, "Version": 1}}
    events = json.dumps([function_url_event("/orders"), function_url_event("/orders")])
    with ssm_stub(lambda seen: next(throttled, None) or (200, value)) as stub:
        env = {**os.environ, **environment, "AWS_ENDPOINT_URL_SSM": stub.url}
        env["AWS_ENDPOINT_URL_DYNAMODB"] = closed_port_url()
        command = [sys.executable, "-c", CHILD, events, "0"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])["answers"]
    assert [answer["statusCode"] for answer in answers] == [503, 503]
    assert all("the counter table" in each["body"] and "opaque" not in each["body"] for each in answers), answers
    assert [seen.body for seen in stub.seen] == [{"Name": name, "WithDecryption": True}] * 2
