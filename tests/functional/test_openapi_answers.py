"""The real handler's answers, validated against the API document it is described by (openapi.json, derived from
the code: tickets_local/openapi.py): a sharded key's, a fenced key's (its state carries the epoch and the fence),
a range block's, a series' numbers, voids and journal pages, health, and errors, each against the schema of its
route, method and status. Schemathesis (test_openapi.py) draws requests at random; these are the answers it
rarely reaches."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_support import DOCUMENT, dereference

from moto_deployment import COUNTER_TABLE, Region
from tickets.settings import Settings
from tickets_admin.__main__ import main as tickets_admin
from tickets_deploy.config import parse_config
from tickets_deploy.environment import region_settings
from tickets_deploy.ledger import applied_from, init_ledger_file, read_ledger_file, record_services, write_ledger_file
from tickets_local import openapi

SERIES = {"invoices": {"start": 1, "format": "INV-{series}-{n:05}"}}
OLD = {"regions": {"us-east-1": 0}, "regionSlots": 1, "strictKeys": True, "counters": {"orders": {"start": 5000}}}
FENCED = {**OLD, "counters": {"orders": {"start": 5000, "shards": 3}, "hot": {"start": 10, "stride": 5, "shards": 4}}}


def operation_of(path: str, method: str, document: dict[str, Any]) -> dict[str, Any]:
    """The documented operation that serves `path`: a literal path before a template, as the dispatch has it."""
    templates = sorted(document["paths"], key=lambda template: "{" in template)
    for template in templates:
        pattern = "^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path) and not (template.startswith("/{") and path[1:].startswith("_")):
            return document["paths"][template][method.lower()]  # type: ignore[no-any-return]
    raise AssertionError(f"{method} {path}: no documented operation")


def assert_documented(region: Region, path: str, method: str = "GET", document=DOCUMENT, **event: Any) -> Any:
    """Call the handler and validate its answer against the schema the document gives its route, method and
    status (the document itself is the root, so every $ref in it resolves)."""
    answer = region.call(path, method, **event)
    responses = operation_of(path, method, document)["responses"]
    assert str(answer.status) in responses, (path, method, answer.status, answer.body)
    schema = dereference(responses[str(answer.status)], document)["content"]["application/json"]["schema"]
    Draft202012Validator({**document, **schema}).validate(answer.body)
    return answer


def deployed(tickets: dict, ledger_dir: Path) -> Region:
    region = Region(tickets, "us-east-1")
    region.settings = region_settings(applied_from(region.config, ledger_dir / "tickets.lock.json"), "us-east-1")
    return region


def test_a_fenced_sharded_keys_answers_are_the_documents(aws, tmp_path: Path) -> None:
    """After a fence, GET /_counters/{key} answers `epoch`, and `epoch` and `fence` inside `config`: the hand-
    written document refused both (additionalProperties false) and no test saw it."""
    config_file = tmp_path / "cdk.json"
    config_file.write_text(json.dumps({"context": {"tickets": OLD}}))
    init_ledger_file(tmp_path / "tickets.lock.json", {"tickets-counters": parse_config(OLD)})
    old = deployed(OLD, tmp_path)
    assert old.post("/orders", query={"count": 7}).status == 200

    config_file.write_text(json.dumps({"context": {"tickets": FENCED}}))
    with contextlib.redirect_stdout(io.StringIO()):
        fenced = tickets_admin(["fence", "--config", str(config_file), "--table", COUNTER_TABLE])
    assert fenced == 0
    ledger = tmp_path / "tickets.lock.json"
    config = parse_config(FENCED)
    write_ledger_file(ledger, record_services(read_ledger_file(ledger), {config.table_name: config}))
    new = deployed(FENCED, tmp_path)

    assert_documented(new, "/orders", query={"count": 5})
    assert_documented(new, "/orders")
    assert_documented(new, "/_blocks/hot", "POST", query={"count": 1000})
    state = assert_documented(new, "/_counters/orders").body
    assert state["epoch"] == {"number": 1, "fence": 5007, "start": 5007}
    assert {"epoch": 1, "fence": 5007}.items() <= state["config"].items() and len(state["lanes"]) == 3
    assert assert_documented(new, "/_counters/hot").body["config"]["shards"] == 4
    assert_documented(old, "/orders", "POST")  # the stopped lanes: a 503 as documented
    assert_documented(new, "/_counters/nobody")  # 404
    assert_documented(new, "/_health")


def test_series_answers_are_the_documents(deploy) -> None:
    region = deploy({**OLD, "series": SERIES})
    headers = {"Idempotency-Key": "doc-1"}
    number = assert_documented(
        region, "/_series/invoices", "POST", headers=headers, body=json.dumps({"ref": "order 1"})
    ).body
    assert number["id"] == f"INV-{number['series']}-00001"
    void = {"series": number["series"], "ticket": number["ticket"], "reason": "cancelled"}
    assert (
        assert_documented(region, "/_series/invoices/void", "POST", body=json.dumps(void)).body["voided"]["reason"]
        == "cancelled"
    )
    page = assert_documented(region, "/_series/invoices/journal", query={"series": number["series"]}).body
    assert [entry["ticket"] for entry in page["entries"]] == [1] and page["next"] is None
    assert_documented(
        region, "/_series/invoices", "POST", body=json.dumps({"ref": "order 2"})
    )  # 400: no Idempotency-Key
    assert_documented(region, "/_series/nope/journal", query={"series": "all"})  # 404


@pytest.mark.parametrize(
    "path, method, query",
    [("/orders", "GET", {"count": "0"}), ("/orders", "GET", {"count": "x"}), ("/_counters/orders", "GET", {"a": "1"})],
)
def test_refusals_are_the_documents(deploy, path, method, query) -> None:
    assert_documented(deploy(OLD), path, method, query=query)


def test_the_compat_routes_document_describes_its_answers(deploy) -> None:
    """The compatibility route answers text only; its errors as JSON, as its document (with compat) says."""
    region = deploy({**OLD, "compat": {"path": "counter"}})
    document = openapi.document(Settings(compat_path="counter"))
    assert_documented(region, "/counter", document=document)  # 400: it needs ?systemKey=
    assert "text/plain" in operation_of("/counter", "GET", document)["responses"]["200"]["content"]
