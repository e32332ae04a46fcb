"""The deployment config (README: Configuration): what parses, what is refused and how, and the handler's view."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

from common import EXAMPLE_CONFIG
from tickets.settings import MAX_SAFE_INTEGER, SETTINGS_ENV, CounterConfig, Settings
from tickets_deploy.config import load_config_file, parse_config, pick_region
from tickets_deploy.environment import handler_environment
from tickets_deploy.regions import NO_FUNCTION_URLS, SERVED_REGIONS, refusal
from tickets_deploy.rules import LOG_RETENTION_DAYS, MAX_TICKET, ConfigError
from tickets_deploy.series_rules import MAX_WIDTH

# cfn-lint's copy of CloudFormation's resource schemas: which resource types each region has, and their properties.
CFN_SCHEMAS = Path(importlib.util.find_spec("cfnlint").origin).parent / "data" / "schemas"


def cloudformation_schema(resource_type: str, region: str = "us-east-1") -> dict:
    digest = json.loads((CFN_SCHEMAS / "providers" / f"{region}.json").read_text())[resource_type]
    return json.loads((CFN_SCHEMAS / "resources" / f"{digest}.json").read_text())


def with_changes(**changes) -> dict:
    raw = copy.deepcopy(EXAMPLE_CONFIG)
    raw.update(changes)
    return raw


def test_the_spec_example_parses():
    config = parse_config(EXAMPLE_CONFIG)
    assert config.regions == {"us-east-1": 0}
    assert (config.default_key, config.auth, config.region_slots, config.strict_keys) == (
        "default",
        "AWS_IAM",
        1,
        False,
    )
    assert config.counters == {
        "orders": CounterConfig(start=5000),
        "invoices": CounterConfig(start=1, stride=10),
    }
    assert config.counters["orders"].max == MAX_SAFE_INTEGER


def test_defaults_fill_everything_but_regions():
    config = parse_config({"regions": {"eu-west-1": 0}})
    assert (config.default_key, config.auth, config.region_slots, config.counters) == ("default", "AWS_IAM", 1, {})
    assert config.idempotency_expiry_seconds == 3600


def test_max_may_be_raised_to_int64():
    config = parse_config(with_changes(counters={"big": {"max": str(MAX_TICKET)}}))
    assert config.counters["big"].max == 2**63 - 1


def test_a_slot_out_of_range_says_region_slots_changes_only_above_a_fence():
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(regions={"us-east-1": 0, "eu-west-1": 1}))
    assert "regionSlots-1 (0), got 1" in str(refused.value)
    assert "raise regionSlots, which changes only above a fence" in str(refused.value)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"regions": {"us-east-1": 0, "eu-west-1": 1}}, "tickets.regions.eu-west-1"),  # slot >= regionSlots
        ({"regions": {"us-east-1": 0, "eu-west-1": 0}, "regionSlots": 2}, "tickets.regions.eu-west-1"),
        ({"regions": {"us-east-1": -1}}, "tickets.regions.us-east-1"),
        ({"regions": {"us-east-1": True}}, "tickets.regions.us-east-1"),
        ({"regions": {"US East": 0}}, "tickets.regions.US East"),
        ({"regions": {}}, "tickets.regions"),
        ({"counters": {"orders": {"stride": 0}}}, "tickets.counters.orders.stride"),
        ({"counters": {"orders": {"start": 10, "max": 9}}}, "tickets.counters.orders.max"),
        ({"counters": {"orders": {"max": MAX_TICKET + 1}}}, "tickets.counters.orders.max"),
        ({"counters": {"orders": {"start": -1}}}, "tickets.counters.orders.start"),
        ({"counters": {"orders": {"shards": 0}}}, "tickets.counters.orders.shards"),
        ({"counters": {"orders": {"start": True}}}, "tickets.counters.orders.start"),
        ({"counters": {"orders": {"start": 1.5}}}, "tickets.counters.orders.start"),
        ({"counters": {"orders": {"start": "05000"}}}, "tickets.counters.orders.start"),  # decimal strings: canonical
        ({"counters": {"orders": {"start": "5e3"}}}, "tickets.counters.orders.start"),
        ({"counters": {"orders": {"start": " 5000"}}}, "tickets.counters.orders.start"),
        ({"counters": {"orders": {"start": "-1"}}}, "tickets.counters.orders.start"),
        ({"counters": {"orders": {"max": str(MAX_TICKET + 1)}}}, "tickets.counters.orders.max"),
        ({"counters": {"orders": {"shards": "2"}}}, "tickets.counters.orders.shards"),  # small: numbers only
        ({"tableName": "ab"}, "tickets.tableName"),
        ({"tableName": "tickets counters"}, "tickets.tableName"),
        ({"tableName": "x" * 244}, "tickets.tableName"),  # + "-idempotency" would pass DynamoDB's 255
        ({"tableName": 7}, "tickets.tableName"),
        ({"counters": {"orders": {"begin": 1}}}, "tickets.counters.orders.begin"),
        ({"counters": {"orders": 5000}}, "tickets.counters.orders"),
        ({"counters": {"_orders": {}}}, "tickets.counters._orders"),
        ({"counters": {"a/b": {}}}, "tickets.counters.a/b"),
        ({"counters": {"x" * 101: {}}}, "tickets.counters.xxx"),
        ({"counters": []}, "tickets.counters"),
        ({"regionSlots": True}, "tickets.regionSlots"),
        ({"regionSlots": 0}, "tickets.regionSlots"),
        ({"auth": "aws_iam"}, "tickets.auth"),
        ({"auth": None}, "tickets.auth"),
        ({"defaultKey": ".hidden"}, "tickets.defaultKey"),
        ({"strictKeys": "yes"}, "tickets.strictKeys"),
        ({"regionslots": 2}, "tickets.regionslots"),  # unknown field (a typo) at the top level
        ({"idempotencyExpirySeconds": 10}, "tickets.idempotencyExpirySeconds"),
        ({"reservedConcurrency": 0}, "tickets.reservedConcurrency"),
        ({"logRetentionDays": 31}, "tickets.logRetentionDays"),
        ({"memorySize": 127}, "tickets.memorySize"),
        ({"memorySize": 10241}, "tickets.memorySize"),
        ({"timeoutSeconds": 16}, "tickets.timeoutSeconds"),
        ({"timeoutSeconds": 5}, "tickets.timeoutSeconds"),
        ({"timeoutSeconds": 7.5}, "tickets.timeoutSeconds"),
        ({"timeoutSeconds": True}, "tickets.timeoutSeconds"),
    ],
)
def test_an_invalid_config_names_the_field(changes, field):
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(**changes))
    assert str(refused.value).startswith(field), str(refused.value)


def test_table_name_defaults_to_a_fixed_name():
    assert parse_config(EXAMPLE_CONFIG).table_name == "tickets-counters"
    assert parse_config(with_changes(tableName="Orders_v2.counters-1")).table_name == "Orders_v2.counters-1"
    assert parse_config(with_changes(tableName="x" * 243)).table_name == "x" * 243


@pytest.mark.parametrize("field", ["start", "stride", "max"])
def test_a_json_number_above_2_53_is_refused_with_the_way_out(field):
    """The CDK CLI reads cdk.json in Node: 36028797018963969 reaches app.py as 36028797018963970."""
    counter = {"start": 1, "max": str(MAX_TICKET), field: 36028797018963970}
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(counters={"big": counter}))
    message = str(refused.value)
    assert message.startswith(f"tickets.counters.big.{field}: ")
    assert "decimal string" in message and "36028797018963970" in message


@pytest.mark.parametrize("value", [1e21, 36028797018963970.0, 5000.0, 1.5])
def test_fraction_and_exponent_forms_are_refused(value):
    """Node writes 1e21 back as 1e+21, a float to Python: no exponent form is ever exact enough to trust."""
    with pytest.raises(ConfigError, match=r"^tickets\.counters\.big\.start: .*without fraction or exponent"):
        parse_config(with_changes(counters={"big": {"start": value}}))


def test_the_largest_safe_json_number_is_accepted():
    config = parse_config(with_changes(counters={"big": {"start": MAX_SAFE_INTEGER}}))
    assert config.counters["big"].start == MAX_SAFE_INTEGER


def test_decimal_strings_are_exact_for_start_stride_and_max():
    config = parse_config(
        with_changes(
            counters={"big": {"start": "36028797018963969", "stride": "9007199254740993", "max": "9223372036854775807"}}
        )
    )
    assert config.counters["big"] == CounterConfig(start=36028797018963969, stride=9007199254740993, max=MAX_TICKET)
    assert parse_config(with_changes(counters={"small": {"start": "5000"}})).counters["small"].start == 5000


def test_exact_values_reach_the_handler_settings():
    config = parse_config(with_changes(counters={"big": {"start": "36028797018963969", "max": str(MAX_TICKET)}}))
    settings = Settings.from_json(
        handler_environment(config, "us-east-1", counter_table="c", idempotency_table="i")[SETTINGS_ENV]
    )
    assert (settings.counters["big"].start, settings.counters["big"].max) == (36028797018963969, MAX_TICKET)


def test_load_config_file_reads_integers_exactly_and_refuses_the_unsafe_ones(tmp_path):
    path = tmp_path / "cdk.json"
    path.write_text(
        '{"context": {"tickets": {"regions": {"us-east-1": 0}, '
        '"counters": {"big": {"start": "36028797018963969", "max": "36028797018963969"}}}}}'
    )
    assert load_config_file(path).counters["big"].start == 36028797018963969
    path.write_text(
        '{"context": {"tickets": {"regions": {"us-east-1": 0}, "counters": {"big": {"start": 36028797018963969}}}}}'
    )
    with pytest.raises(ConfigError, match=r"^.*cdk\.json: tickets\.counters\.big\.start: .*decimal string"):
        load_config_file(path)


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "not found"),
        ("{", "not valid JSON"),
        ('{"context": {}}', "tickets: missing"),
    ],
)
def test_load_config_file_says_what_is_wrong_with_the_file(tmp_path, content, message):
    path = tmp_path / "cdk.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message) as refused:
        load_config_file(path)
    assert str(refused.value).startswith(str(path))


def test_pick_region_defaults_to_the_first_and_refuses_an_unconfigured_one():
    config = parse_config(with_changes(regions={"eu-west-1": 1, "us-east-1": 0}, regionSlots=2))
    assert pick_region(config, None) == "eu-west-1"
    assert pick_region(config, "us-east-1") == "us-east-1"
    with pytest.raises(ConfigError, match="ap-south-1.*eu-west-1, us-east-1"):
        pick_region(config, "ap-south-1")


def test_a_missing_config_says_where_it_belongs():
    with pytest.raises(ConfigError, match="cdk.json"):
        parse_config(None)


def test_handler_environment_round_trips_through_settings():
    config = parse_config(
        with_changes(
            regions={"us-east-1": 0, "eu-west-1": 2},
            regionSlots=3,
            strictKeys=True,
            defaultKey="main",
            idempotencyExpirySeconds=600,
            counters={"orders": {"start": 5000, "max": 10**15, "shards": 4}},
        )
    )
    environment = handler_environment(config, "eu-west-1", counter_table="c", idempotency_table="i")
    assert (environment["TICKETS_TABLE"], environment["TICKETS_IDEMPOTENCY_TABLE"]) == ("c", "i")
    assert environment["POWERTOOLS_SERVICE_NAME"] == "tickets"
    assert environment["POWERTOOLS_METRICS_NAMESPACE"]
    settings = Settings.from_json(environment[SETTINGS_ENV])
    assert settings == Settings(
        region_slot=2,
        region_slots=3,
        default_key="main",
        strict_keys=True,
        counters={"orders": CounterConfig(start=5000, max=10**15, shards=4)},
        idempotency_expiry_seconds=600,
    )


def test_handler_environment_refuses_an_unconfigured_region():
    with pytest.raises(ConfigError, match="regions"):
        handler_environment(parse_config(EXAMPLE_CONFIG), "eu-west-1", counter_table="c", idempotency_table="i")


def test_counter_lookup_with_and_without_strict_keys():
    orders = CounterConfig(start=5000)
    lenient = Settings(counters={"orders": orders})
    strict = Settings(counters={"orders": orders}, strict_keys=True, default_key="main")
    assert lenient.counter("orders") == strict.counter("orders") == orders
    assert lenient.counter("anything") == CounterConfig()
    assert strict.counter("anything") is None
    assert strict.counter("main") == CounterConfig()  # the default key is always served


@pytest.mark.parametrize(
    "region, reason",
    [
        ("us-east-9", "not a region"),
        ("cn-north-1", "aws-cn partition, and this stack supports the commercial partition (aws) only"),
        ("us-gov-west-1", "aws-us-gov partition, and this stack supports the commercial partition (aws) only"),
        ("ap-south-2", "Function URLs"),
        ("eu-south-2", "Function URLs"),
        ("mx-central-1", "Function URLs"),
        ("me-south-1", "Powertools' public layer parameters"),
        ("Europe", "not a region name"),
    ],
)
def test_a_region_the_stack_cannot_serve_is_refused_naming_the_field_and_why(region, reason):
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(regions={region: 0}))
    message = str(refused.value)
    assert message.startswith(f"tickets.regions.{region}: the stack cannot be deployed"), message
    assert reason in message


def test_every_region_without_function_urls_is_refused():
    for region in NO_FUNCTION_URLS:
        assert refusal(region) is not None and "Function URLs" in refusal(region)


def test_every_served_region_has_function_urls_in_cloudformation():
    """cfn-lint's copy of each region's CloudFormation schemas; tests/synth/test_stack.py also lints a synthesised
    stack in every served region."""
    lacking = [
        region
        for region in sorted(SERVED_REGIONS)
        if "AWS::Lambda::Url" not in json.loads((CFN_SCHEMAS / "providers" / f"{region}.json").read_text())
    ]
    assert lacking == []


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1", "ap-southeast-3", "sa-east-1", "af-south-1"])
def test_commercial_regions_with_function_urls_and_the_layer_are_accepted(region):
    assert parse_config(with_changes(regions={region: 0})).regions == {region: 0}


def test_max_block_defaults_to_a_million_and_may_be_lowered_per_deployment_and_per_key():
    assert parse_config(EXAMPLE_CONFIG).max_block == 1_000_000
    config = parse_config(with_changes(maxBlock=5000, counters={"orders": {"start": 5000, "maxBlock": 100}}))
    assert config.max_block == 5000
    assert config.counters["orders"] == CounterConfig(start=5000, max_block=100)
    env = handler_environment(config, "us-east-1", counter_table="t", idempotency_table="i")
    settings = Settings.from_json(env[SETTINGS_ENV])
    assert settings.block_limit(settings.counters["orders"]) == 100
    assert settings.block_limit(settings.counter("unlisted")) == 5000


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"maxBlock": 0}, "tickets.maxBlock"),
        ({"maxBlock": 1_000_001}, "tickets.maxBlock"),
        ({"maxBlock": "1000"}, "tickets.maxBlock"),
        ({"counters": {"orders": {"maxBlock": 0}}}, "tickets.counters.orders.maxBlock"),
        ({"maxBlock": 100, "counters": {"orders": {"maxBlock": 101}}}, "tickets.counters.orders.maxBlock"),
    ],
    ids=["zero", "over-a-million", "string", "key-zero", "key-above-deployment"],
)
def test_max_block_out_of_range_is_refused_naming_the_field(changes, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        parse_config(with_changes(**changes))


def test_log_retention_accepts_exactly_cloudformations_periods():
    """The one list parse_config checks and the stack writes into RetentionInDays as it stands."""
    allowed = cloudformation_schema("AWS::Logs::LogGroup")["properties"]["RetentionInDays"]["enum"]
    assert list(LOG_RETENTION_DAYS) == allowed
    assert parse_config(with_changes(logRetentionDays=3653)).log_retention_days == 3653


def test_callers_are_account_ids_and_role_arns():
    callers = ["111122223333", "arn:aws:iam::444455556666:role/orders/TicketsCaller"]
    assert parse_config(with_changes(callers=callers)).callers == tuple(callers)
    assert parse_config(EXAMPLE_CONFIG).callers == ()


@pytest.mark.parametrize(
    "changes, field, says",
    [
        ({"callers": "111122223333"}, "tickets.callers", "must be a list"),
        ({"callers": ["11112222333"]}, "tickets.callers[0]", "12-digit account id"),
        ({"callers": [111122223333]}, "tickets.callers[0]", "12-digit account id"),
        ({"callers": ["111122223333", "arn:aws:iam::444455556666:user/bob"]}, "tickets.callers[1]", "role ARN"),
        ({"callers": ["arn:aws-cn:iam::444455556666:role/orders"]}, "tickets.callers[0]", "role ARN"),
        ({"callers": ["111122223333", "111122223333"]}, "tickets.callers[1]", "listed twice"),
        ({"callers": ["111122223333"], "auth": "NONE"}, "tickets.callers", "needs auth AWS_IAM"),
    ],
    ids=["not-a-list", "11-digits", "a-number", "a-user", "other-partition", "twice", "auth-none"],
)
def test_a_bad_caller_is_refused_naming_the_entry(changes, field, says):
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(**changes))
    assert str(refused.value).startswith(f"{field}: "), refused.value
    assert says in str(refused.value)


# --- one definition of each field (tickets_deploy.schema.FIELDS) ---------------------------------


def test_the_functions_settings_carry_the_fields_marked_setting_with_the_schemas_defaults():
    """Settings (the function's side, which cannot import the schema) has an attribute for each field marked
    `setting`, with the field's default: the environment leaves a value at its default out, so a different
    default there would be a different config in the function."""
    from dataclasses import fields

    from tickets.config_json import default_of
    from tickets_deploy.schema import COUNTER_FIELDS, FIELDS

    settings = {each.name: default_of(each) for each in fields(Settings)}
    carried = {each.attribute: each.default for each in FIELDS if each.setting}
    assert set(settings) - {"region_slot"} == set(carried)
    assert {name: settings[name] for name in carried} == carried
    # A counter's fields are CounterConfig's attributes (epoch and fence come from the ledger's epochs,
    # tickets_deploy/ledger/rules.py, never from cdk.json), and take their defaults from it.
    counter = {each.name: default_of(each) for each in fields(CounterConfig)}
    assert {each.attribute: each.default for each in COUNTER_FIELDS} == {
        name: default for name, default in counter.items() if name not in ("epoch", "fence")
    }


def test_a_config_round_trips_through_cdk_json_s_shape_exactly():
    from tickets_deploy.config import to_raw

    config = parse_config(
        with_changes(
            counters={"big": {"start": str(MAX_TICKET - 5), "max": str(MAX_TICKET), "maxBlock": 3}},
            callers=["111122223333"],
            compat={"path": "counter"},
            corsOrigins=["https://app.example.com"],
            reservedConcurrency=5,
        )
    )
    assert parse_config(json.loads(json.dumps(to_raw(config)))) == config


@pytest.mark.parametrize("seconds", [5, 16, 900])
def test_a_function_timeout_that_breaks_the_deadline_is_refused_naming_the_bound(seconds):
    """The request budget and its render margin must fit (6 s), and a hung invocation must end within 15 s:
    Lambda itself would take anything up to 900 s."""
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(timeoutSeconds=seconds))
    message = str(refused.value)
    assert message.startswith(f"tickets.timeoutSeconds: must be a whole number of seconds from 6 to 15, got {seconds}")
    assert "request budget and its render margin (5 s + 0.25 s, tickets/timing.py)" in message
    assert "MAX_FUNCTION_TIMEOUT_SECONDS (15 s)" in message


def test_the_function_timeout_and_memory_default_as_before_and_take_the_bounds():
    from tickets import timing

    default = parse_config(EXAMPLE_CONFIG)
    assert (default.timeout_seconds, default.memory_size) == (timing.FUNCTION_TIMEOUT_SECONDS, 256)
    assert timing.MIN_FUNCTION_TIMEOUT_SECONDS == 6  # ceil(5 s budget + 0.25 s margin)
    for seconds in (6, 15):
        assert parse_config(with_changes(timeoutSeconds=seconds)).timeout_seconds == seconds
    assert parse_config(with_changes(memorySize=10240)).memory_size == 10240


def test_log_retention_defaults_to_a_year():
    """Control Tower's proactive control CT.CLOUDWATCH.PR.2 requires log groups kept at least 365 days."""
    assert parse_config(EXAMPLE_CONFIG).log_retention_days == 365


@pytest.mark.parametrize("width", [1, 16, MAX_WIDTH])
def test_a_series_pads_its_number_to_at_most_max_width_digits(width):
    config = parse_config(with_changes(series={"bills": {"format": f"INV-{{n:0{width}}}"}}))
    assert config.series["bills"].render_id("bills", "all", 42) == "INV-" + "42".zfill(width)


def test_a_wider_padding_stops_synthesis_naming_the_field_and_the_limit():
    with pytest.raises(ConfigError) as refused:
        parse_config(with_changes(series={"bills": {"format": f"INV-{{n:0{MAX_WIDTH + 1}}}"}}))
    assert str(refused.value) == (
        f"tickets.series.bills.format pads the number to {MAX_WIDTH + 1} digits ({{n:0{MAX_WIDTH + 1}}}), "
        f"more than the {MAX_WIDTH} allowed (a number has at most 16): use a width from 1 to {MAX_WIDTH}, such as "
        "{n:016}"
    )


def counters_that_fit(key_length: int) -> int:
    """How many counters like the shipped `invoices` ({"start": 1, "stride": 10}), with keys of `key_length`
    characters, the function's environment takes before synthesis refuses one more."""
    count = 0
    while True:
        keys = [f"k{index:0{key_length - 1}d}" for index in range(count + 1)]
        config = parse_config(
            {"regions": {"us-east-1": 0}, "counters": {key: {"start": 1, "stride": 10} for key in keys}}
        )
        try:
            handler_environment(config, "us-east-1", counter_table="c", idempotency_table="i")
        except ConfigError as refused:
            assert "configure only keys that need a non-default start" in str(refused)
            return count
        count += 1


def test_the_readme_states_how_many_counters_fit():
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    eight, sixteen = counters_that_fit(8), counters_that_fit(16)
    assert (eight, sixteen) == (42, 37)
    assert (
        f"Up to {eight} counters fit in `counters` with 8-character keys ({sixteen} with 16-character keys)" in readme
    )
