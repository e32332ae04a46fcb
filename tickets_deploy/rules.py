"""The rules of cdk.json's `tickets` fields (limits, patterns, parsers), each naming where a value was written."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tickets import timing
from tickets.access import Rules
from tickets.keys import KEY_RULE, MAX_BLOCK, is_valid_key
from tickets.opaque import ALPHABETS, CHECKS, KEY_VERSIONS, OpaqueConfig
from tickets.series.config import SeriesConfig, SeriesConfigError
from tickets.settings import MAX_SAFE_INTEGER
from tickets.tables import IDEMPOTENCY_TABLE_SUFFIX
from tickets.workers.config import MAX_POOL_SIZE, MAX_TTL_SECONDS, MIN_TTL_SECONDS, PoolConfig

from .access import ACCOUNT_PATTERN, AccessRuleError, parse_rules
from .regions import refusal
from .series_rules import parse_series

MAX_TICKET = 2**63 - 1  # DynamoDB stores more, but most callers keep tickets in an int64
MAX_SHARDS = 100  # /_counters reads all of a key's lanes with one BatchGetItem: at most 100 keys
# CloudWatch Logs' retention periods (AWS::Logs::LogGroup RetentionInDays), in days.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
MAX_SETTINGS_BYTES = 3072  # Lambda allows 4 KB of environment in all; leave room for the rest
# DynamoDB allows 255 characters; the local server appends IDEMPOTENCY_TABLE_SUFFIX.
TABLE_NAME_PATTERN = re.compile(rf"[A-Za-z0-9_.-]{{3,{255 - len(IDEMPOTENCY_TABLE_SUFFIX)}}}")
DECIMAL_PATTERN = re.compile(r"0|[1-9][0-9]{0,19}")
ROLE_ARN_PATTERN = re.compile(r"arn:aws:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}")


class ConfigError(ValueError):
    """An invalid deployment config; the message names the field and the rule."""


# (the value as written, or the default; the fields parsed before it, by attribute; where) -> the parsed value
Parser = Callable[[Any, Mapping[str, Any], str], Any]


def whole(low: int, high: int) -> Parser:
    return lambda value, parsed, where: whole_number(value, where, low=low, high=high)


def exact(low: int) -> Parser:
    return lambda value, parsed, where: exact_integer(value, low=low, high=MAX_TICKET, where=where)


def regions_rule(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, int]:
    region_slots = parsed["region_slots"]
    if not isinstance(value, dict) or not value:
        raise ConfigError(f'{where}: must map at least one region name to its slot, e.g. {{"us-east-1": 0}}')
    owners: dict[int, str] = {}
    for region, slot in value.items():
        at = f"{where}.{region}"
        why_not = refusal(region)
        if why_not is not None:
            raise ConfigError(f"{at}: {why_not}")
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < region_slots:
            raise ConfigError(
                f"{at}: slot must be a whole number from 0 to regionSlots-1 ({region_slots - 1}), got {slot!r}; "
                "give the region a free slot, or raise regionSlots, which changes only above a fence "
                "(docs/how-to/change-a-layout.md)"
            )
        if slot in owners:
            raise ConfigError(
                f"{at}: slot {slot} is already {owners[slot]}'s: two regions would issue the same tickets"
            )
        owners[slot] = region
    return dict(value)


def accepting(accepts: Callable[[Any], bool], must_be: str) -> Parser:

    def rule(value: Any, parsed: Mapping[str, Any], where: str) -> Any:
        if not accepts(value):
            raise ConfigError(f"{where}: must be {must_be}, got {value!r}")
        return value

    return rule


table_name_rule = accepting(
    lambda value: isinstance(value, str) and TABLE_NAME_PATTERN.fullmatch(value) is not None,
    f"a DynamoDB table name, 3-243 characters from A-Z a-z 0-9 _ . - (the local server appends "
    f"{IDEMPOTENCY_TABLE_SUFFIX!r} for its idempotency table)",
)


default_key_rule = accepting(is_valid_key, f"a valid key ({KEY_RULE})")
auth_rule = accepting(lambda value: value in ("AWS_IAM", "NONE"), "one of AWS_IAM, NONE")
# The rule of a field declared without one, by its annotation.
RULES_BY_TYPE: dict[str, Parser] = {
    "bool": accepting(lambda value: isinstance(value, bool), "true or false"),
    "str": accepting(lambda value: isinstance(value, str), "a string"),
}


def optional(rule: Parser) -> Parser:
    return lambda value, parsed, where: None if value is None else rule(value, parsed, where)


def log_retention_rule(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    if value not in LOG_RETENTION_DAYS or isinstance(value, bool):
        raise ConfigError(f"{where}: must be one of CloudWatch's retention periods {LOG_RETENTION_DAYS}, got {value!r}")
    return int(value)


def function_timeout_rule(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    low, high = timing.MIN_FUNCTION_TIMEOUT_SECONDS, timing.MAX_FUNCTION_TIMEOUT_SECONDS
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or not low <= value <= high:
        raise ConfigError(
            f"{where}: must be a whole number of seconds from {low} to {high}, got {value!r}: at least the request "
            f"budget and its render margin ({timing.REQUEST_BUDGET_SECONDS:g} s + {timing.RENDER_MARGIN_SECONDS:g} s, "
            f"tickets/timing.py), at most MAX_FUNCTION_TIMEOUT_SECONDS ({high} s) "
            "(docs/explanation/failures-and-idempotency.md)"
        )
    return int(value)


def cors_origins_rule(value: Any, parsed: Mapping[str, Any], where: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(o, str) and o for o in value):
        raise ConfigError(f'{where}: must be a list of origins such as "https://app.example.com"')
    return tuple(value)


alarm_email_rule = optional(accepting(lambda value: isinstance(value, str) and "@" in value, "an e-mail address"))


def counter_max_rule(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    maximum = exact_integer(value, low=0, high=MAX_TICKET, where=where)
    if maximum < parsed["start"]:
        raise ConfigError(f"{where}: must be >= start ({parsed['start']}), got {maximum}")
    return maximum


def counter_max_block_rule(value: Any, parsed: Mapping[str, Any], where: str) -> int:
    max_block = whole_number(value, where, low=1, high=MAX_BLOCK)
    if max_block > parsed["deployment_max_block"]:
        raise ConfigError(
            f"{where}: must be at most tickets.maxBlock ({parsed['deployment_max_block']}), got {max_block}"
        )
    return max_block


def callers_rule(value: Any, parsed: Mapping[str, Any], where: str) -> tuple[str, ...]:
    raw, auth = list(value) if isinstance(value, tuple) else value, parsed["auth"]
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: must be a list of account ids and role ARNs, got {raw!r}")
    for index, caller in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(caller, str) or not (ACCOUNT_PATTERN.fullmatch(caller) or ROLE_ARN_PATTERN.fullmatch(caller)):
            raise ConfigError(
                f'{at}: must be a 12-digit account id or a role ARN ("arn:aws:iam::ACCOUNT:role/NAME"), got {caller!r}'
            )
        if caller in raw[:index]:
            raise ConfigError(f"{at}: {caller!r} is listed twice")
    if raw and auth != "AWS_IAM":
        raise ConfigError(f"{where}: needs auth AWS_IAM (it grants IAM permissions); with auth {auth} anyone may call")
    return tuple(raw)


def compat_rule(raw: Any, parsed: Mapping[str, Any], where: str) -> str:
    """The compatibility route's path: shaped like a key, so never a route of ours (those start with `_`)."""
    require_object(raw, where, {"path"})
    path = raw.get("path")
    if not is_valid_key(path):
        raise ConfigError(
            f'{where}.path: must be one path segment of {KEY_RULE} (without slashes), e.g. "counter", got {path!r}'
        )
    if path == parsed["default_key"] or path in parsed["counters"]:
        raise ConfigError(
            f"{where}.path: {path!r} is a key this config names (defaultKey or counters); /{path} would stop reaching "
            "it: choose another path"
        )
    return str(path)


def require_object(raw: Any, where: str, allowed: set[str]) -> None:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown field (known: {', '.join(sorted(allowed))})")


def whole_number(value: Any, where: str, *, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{where}: must be a whole number from {low} to {high}, got {value!r}")
    return value


def exact_integer(value: Any, *, low: int, high: int, where: str) -> int:
    """low..high, as a JSON number up to 2^53-1 or a decimal string (the CDK CLI's Node rounds bigger numbers)."""
    if isinstance(value, str) and DECIMAL_PATTERN.fullmatch(value):
        value = int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and value > MAX_SAFE_INTEGER:
        raise ConfigError(
            f"{where}: a JSON number above 2^53-1 is rounded by the CDK CLI (Node; this one arrived as {value}): "
            f'write it as a decimal string, "{where.rpartition(".")[2]}": "<digits>"'
        )
    elif isinstance(value, float):
        raise ConfigError(
            f"{where}: must be a whole number from {low} to {high} written without fraction or exponent "
            f"(above 2^53-1 as a decimal string), got {value!r}"
        )
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{where}: must be a whole number from {low} to {high} (or a decimal string), got {value!r}")
    return value


def access_rule(value: Any, parsed: Mapping[str, Any], where: str) -> Rules:
    if parsed["auth"] != "AWS_IAM":
        raise ConfigError(
            f"{where}: needs auth AWS_IAM: with auth {parsed['auth']} the function is told no caller, so no rule could "
            "match; set auth to AWS_IAM or remove access"
        )
    try:
        return parse_rules(value.to_json() if isinstance(value, Rules) else value, where)
    except AccessRuleError as err:
        raise ConfigError(str(err)) from None


def series_rule(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, SeriesConfig]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be an object mapping names to series (docs/reference/series.md)")
    counters = {*parsed["counters"], parsed["default_key"]}
    series = {}
    for key, raw in value.items():
        if not is_valid_key(key):
            raise ConfigError(f"{where}: invalid name {key!r}; a series name is {KEY_RULE}")
        if key in counters:
            raise ConfigError(
                f"{where}.{key}: {key!r} is a counter (counters or defaultKey): name the series differently"
            )
        if isinstance(raw, SeriesConfig):  # the construct's prop
            raw = raw.to_json()
        if isinstance(raw, Mapping) and "opaque" in raw:
            raise ConfigError(
                f"{where}.{key}.opaque: a series cannot be opaque: its numbers are consecutive on purpose (an invoice "
                "numbering must show that none is missing). Configure an opaque counter under counters instead"
            )
        try:
            series[key] = parse_series(key, raw, region_slots=parsed["region_slots"], where=f"{where}.{key}")
        except SeriesConfigError as err:
            periods = isinstance(raw, Mapping) and raw.get("period") is not None
            grown = "lacks {series}" in str(err) and not periods  # refused for regionSlots > 1 only
            raise ConfigError(str(err) + (_NO_WAY_TO_MORE_REGIONS if grown else "")) from None
    return series


def workers_rule(value: Any, parsed: Mapping[str, Any], where: str) -> dict[str, PoolConfig]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f'{where}: must map pool names to pools, e.g. {{"snowflake": {{"size": 1024, "ttlSeconds": 60}}}}'
        )
    pools = {}
    for name, raw in value.items():
        if not is_valid_key(name):
            raise ConfigError(f"{where}: invalid pool name {name!r}; a pool name is {KEY_RULE}")
        at = f"{where}.{name}"
        raw = raw.to_json() if isinstance(raw, PoolConfig) else raw
        require_object(raw, at, {"size", "ttlSeconds"})
        size = whole_number(raw.get("size"), f"{at}.size", low=1, high=MAX_POOL_SIZE)
        ttl = whole_number(raw.get("ttlSeconds"), f"{at}.ttlSeconds", low=MIN_TTL_SECONDS, high=MAX_TTL_SECONDS)
        pools[name] = PoolConfig(size, ttl)
    return pools


# regionSlots grew under a series whose ids lack {series}: the ledger refuses such a series when it is first
# recorded (tickets_deploy/ledger/rules.py), so only one recorded before that rule meets this.
_NO_WAY_TO_MORE_REGIONS = (
    " (a series not yet deployed). If tickets.lock.json records this series, there is no way out: its format is "
    "permanent. Keep regionSlots 1 while it is configured (docs/reference/series.md)"
)


# The rule of `counters.K.opaque`: its shape, and a domain (tickets.opaque) that holds every ticket 0 .. max.
# Digits: an id read as a number stays a JavaScript-safe integer. Base32: 100 bits, far above every ticket.
MAX_WIDTH = {"digits": 15, "base32": 20}
MIN_WIDTH = 2
MIN_IDS_PER_VERSION = 1_000_000
MAX_KEY_VERSIONS = 1000
OPAQUE_EXAMPLE = '{"width": 10, "alphabet": "digits", "check": "luhn"}'
OPAQUE_FIELDS = {"width", "alphabet", "check", "keyVersions", "keyVersion"}


def parse_opaque(value: Any, parsed: Mapping[str, Any], where: str) -> OpaqueConfig:
    opaque = opaque_settings(value, where)
    size, ids = opaque.ids_per_version, describe(opaque, key_version=False)
    if size < MIN_IDS_PER_VERSION:
        raise ConfigError(
            f"{where}: {ids} give {size:,} ids per key version, fewer than the {MIN_IDS_PER_VERSION:,} "
            f"NIST SP 800-38G asks of a format-preserving permutation (from enough ids of a small domain, and their "
            f"order, the permutation can be learned): {_widen(opaque, MIN_IDS_PER_VERSION - 1)}"
        )
    maximum = parsed["max"]
    if maximum >= size:
        max_where = where.rpartition(".")[0] + ".max"
        default = " (2^53-1, its default)" if maximum == MAX_SAFE_INTEGER else ""
        raise ConfigError(
            f"{where}: {ids} give each key version {size:,} ids, for tickets 0 to {size - 1:,}; "
            f"{max_where} is {maximum:,}{default}, and every ticket the counter can issue needs an id. "
            f"Lower {max_where} to {size - 1}, or {_widen(opaque, maximum)}"
        )
    return opaque


def opaque_settings(value: Any, where: str) -> OpaqueConfig:
    """The settings alone (the ledger reads its records with this)."""
    if isinstance(value, OpaqueConfig):  # the construct's prop
        value = value.to_json()
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be an object such as {OPAQUE_EXAMPLE}, got {value!r}")
    require_object(value, where, OPAQUE_FIELDS)
    alphabet = value.get("alphabet")
    if alphabet not in ALPHABETS:
        raise ConfigError(f"{where}.alphabet: must be one of {', '.join(ALPHABETS)}, got {alphabet!r}")
    check = value.get("check")
    if check is not None and check not in CHECKS:
        raise ConfigError(f"{where}.check: must be {' or '.join(CHECKS)} (a Luhn check character), or absent")
    width = value.get("width")
    widest = MAX_WIDTH[alphabet]
    why = " (an id read as a number stays a JavaScript-safe integer)" if alphabet == "digits" else ""
    if isinstance(width, int) and not isinstance(width, bool) and width > widest:
        raise ConfigError(f"{where}.width: at most {widest} for {alphabet}{why}, got {width}")
    width = whole_number(width, f"{where}.width", low=MIN_WIDTH, high=widest)
    versions = whole_number(
        value.get("keyVersions", KEY_VERSIONS), f"{where}.keyVersions", low=1, high=MAX_KEY_VERSIONS
    )
    version = value.get("keyVersion", 1)
    if isinstance(version, int) and not isinstance(version, bool) and version > versions:
        raise ConfigError(
            f"{where}.keyVersion: {version} is above keyVersions ({versions}), the versions these ids leave room for"
        )
    return OpaqueConfig(
        width, alphabet, check, versions, whole_number(version, f"{where}.keyVersion", low=1, high=versions)
    )


def describe(opaque: OpaqueConfig, *, key_version: bool = True) -> str:
    """E.g. `10 digits with a Luhn check and 10 key versions (key version 1)`."""
    check = " with a Luhn check" if opaque.check else ", no check character,"
    version = f" (key version {opaque.key_version})" if key_version else ""
    return f"{_wide(opaque.width, opaque.alphabet)}{check} and {opaque.key_versions} key versions{version}"


def _wide(width: int, alphabet: str) -> str:
    return f"{width} digits" if alphabet == "digits" else f"{width} {alphabet} characters"


def _widen(opaque: OpaqueConfig, highest: int) -> str:
    """The narrowest id of the same alphabet (else base32) whose domain holds 0 .. highest."""
    for alphabet in dict.fromkeys((opaque.alphabet, "base32")):
        for width in range(MIN_WIDTH, MAX_WIDTH[alphabet] + 1):
            wider = OpaqueConfig(width, alphabet, opaque.check, opaque.key_versions)
            if wider.ids_per_version > highest:
                return f"make the ids {_wide(width, alphabet)} ({wider.ids_per_version:,} ids per key version)."
    raise AssertionError("base32's widest ids hold every ticket (2^63-1) under 1000 key versions")
