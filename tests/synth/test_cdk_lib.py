"""tickets_cdk, the construct library (docs/how-to/use-the-construct.md): the construct's props and early refusals,
the app-level ledger check, and examples/cdk-app synthesised from the built wheel installed into a clean environment
(tests/installed.py), as a user's app would be."""

from __future__ import annotations

import ast
import inspect
import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from aws_cdk import App, Duration, Environment, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from linting import cfn_lint_errors

import tickets
import tickets_cdk
from installed import (
    EXAMPLE,
    built_wheel,
    environment,
    installed_python,
    synth_app,
    synthesised_example,
    validation_findings,
)
from tickets_cdk import TicketAlarms, TicketService
from tickets_cdk.ledger_check import LEDGER_PATH_CONTEXT
from tickets_cdk.powertools import POWERTOOLS_VERSION
from tickets_cdk.service import FIELD_PROPS
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import read_ledger_file, record_services, write_ledger_file
from tickets_deploy.schema import FIELDS

ROOT = Path(__file__).resolve().parents[2]


def _stack(region: str | None = "eu-west-1", name: str = "Shop", app: App | None = None) -> Stack:
    return Stack(app or App(), name, env=Environment(region=region) if region else None)


# --- the construct's interface ------------------------------------------------------------------


def test_every_field_of_cdk_json_is_a_keyword_prop_defaulting_to_the_field_s_default():
    parameters = inspect.signature(TicketService.__init__).parameters
    keywords = {name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(FIELD_PROPS) == {each.prop for each in FIELDS if each.owner == "TicketService"}
    assert set(FIELD_PROPS) <= keywords
    assert keywords - set(FIELD_PROPS) == {"service_name", "table_logical_ids", "removal_policy", "encryption_key"}
    # None stands for the field's default, which FIELDS alone defines.
    assert all(parameters[name].default is None for name in FIELD_PROPS)


def test_the_version_is_the_package_s():
    assert tickets_cdk.__version__ == tickets.__version__


def test_the_powertools_pin_of_requirements_serve_is_the_library_s():
    pins = [line for line in (ROOT / "requirements-serve.txt").read_text().splitlines() if "powertools==" in line]
    assert pins == [f"aws-lambda-powertools=={POWERTOOLS_VERSION}"]


def test_the_props_take_the_fields_values_and_defaults():
    service = TicketService(
        _stack(),
        "Orders",
        table_name="shop-orders",
        region_slots=3,
        region_slot=2,
        strict_keys=True,
        counters={"orders": {"start": 5000, "max_block": 10}, "big": {"max": 2**63 - 1}},  # exact in Python
        callers=["111122223333"],
    )
    assert service.region == "eu-west-1" and service.region_slot == 2
    assert service.config == parse_config(
        {
            "tableName": "shop-orders",
            "regions": {"eu-west-1": 2},
            "regionSlots": 3,
            "strictKeys": True,
            "counters": {"orders": {"start": 5000, "maxBlock": 10}, "big": {"max": str(2**63 - 1)}},
            "callers": ["111122223333"],
        }
    )
    assert service.service_name == "shop-orders"  # metrics are the service's own
    defaults = TicketService(_stack(), "Defaults")
    assert defaults.config == parse_config({"regions": {"eu-west-1": 0}})


@pytest.mark.parametrize(
    "props, message",
    [
        ({"region_slots": 0}, "TicketService Shop/Orders: region_slots: must be a whole number from 1 to 1000, got 0"),
        ({"region_slot": 1}, "TicketService Shop/Orders: region_slot.eu-west-1: slot must be a whole number from 0"),
        ({"counters": {"orders": {"stride": 0}}}, "TicketService Shop/Orders: counters.orders.stride: must be"),
        ({"counters": {"orders": {"colour": 1}}}, "TicketService Shop/Orders: counters.orders.colour: unknown field"),
        ({"auth": "aws_iam"}, "TicketService Shop/Orders: auth: must be one of AWS_IAM, NONE"),
        ({"table_name": "ab"}, "TicketService Shop/Orders: table_name: must be a DynamoDB table name"),
        ({"log_retention_days": 31}, "TicketService Shop/Orders: log_retention_days: must be one of CloudWatch's"),
        ({"timeout": Duration.seconds(30)}, "TicketService Shop/Orders: timeout: must be a whole number of seconds"),
        ({"timeout": Duration.millis(7500)}, "TicketService Shop/Orders: timeout: must be a whole number of seconds"),
        ({"memory_size": 64}, "TicketService Shop/Orders: memory_size: must be a whole number from 128 to 10240"),
        ({"auth": "NONE", "callers": ["111122223333"]}, "TicketService Shop/Orders: callers: needs auth AWS_IAM"),
        ({"compat": {"path": "default"}}, "TicketService Shop/Orders: compat.path: 'default' is a key this config"),
    ],
)
def test_invalid_props_are_refused_when_the_construct_is_made_naming_the_prop(props, message):
    with pytest.raises(ValueError) as refused:
        TicketService(_stack(), "Orders", **props)
    assert str(refused.value).startswith(message), str(refused.value)


@pytest.mark.parametrize("days", [0, 3651, True, "30"])
def test_an_invalid_alarm_days_left_is_refused_naming_the_prop(days):
    stack = _stack()
    service = TicketService(stack, "Orders")
    with pytest.raises(ValueError) as refused:
        TicketAlarms(stack, "Alarms", service=service, alarm_days_left=days)
    assert str(refused.value) == (
        f"TicketAlarms Shop/Alarms: alarm_days_left: must be a whole number from 1 to 3650, got {days!r}"
    )


def test_memory_size_and_timeout_set_the_function_s():
    chosen = {"memory_size": 512, "timeout": Duration.seconds(12)}
    settings = {}
    for name, props in (("Shop", chosen), ("Whole", {"timeout": 6}), ("Defaults", {})):  # seconds do too
        function = TicketService(_stack(name=name), "Orders", **props).function.node.default_child
        assert isinstance(function, lambda_.CfnFunction)
        settings[name] = (function.memory_size, function.timeout)  # the template's MemorySize and Timeout
    assert settings == {"Shop": (512, 12), "Whole": (256, 6), "Defaults": (256, 10)}


def test_an_environment_agnostic_stack_is_refused_saying_why():
    with pytest.raises(ValueError) as refused:
        TicketService(_stack(region=None), "Orders")
    message = str(refused.value)
    assert "environment-agnostic" in message and "Function URLs exist only in some regions" in message
    assert "slot" in message and "env=Environment(region=" in message


@pytest.mark.parametrize("region, reason", [("ap-south-2", "Function URLs"), ("cn-north-1", "aws-cn partition")])
def test_a_region_without_what_the_service_needs_is_refused(region, reason):
    with pytest.raises(ValueError, match=reason):
        TicketService(_stack(region=region), "Orders")


def test_two_services_in_one_region_need_their_own_table_and_service_names():
    app = App()
    TicketService(_stack(app=app), "Orders", table_name="shop-orders")
    with pytest.raises(ValueError, match=r"same region \(eu-west-1\) has the same table name"):
        TicketService(_stack(app=app, name="Other"), "Orders", table_name="shop-orders")
    with pytest.raises(ValueError, match=r"has the same service name \(metrics\)"):
        TicketService(_stack(app=app, name="Third"), "Invoices", table_name="shop-invoices", service_name="shop-orders")
    # Another region is the same service's other slot, not a collision.
    TicketService(_stack(app=app, name="Us", region="us-east-1"), "Orders", table_name="shop-orders")


def test_the_tables_logical_ids_come_from_the_construct_id_and_never_collide_in_a_stack():
    stack = _stack()
    orders = TicketService(stack, "Orders", table_name="shop-orders")

    def logical_id(table):
        return stack.resolve(table.node.default_child.logical_id)

    assert logical_id(orders.table) == "OrdersTable"
    assert logical_id(orders.idempotency_table) == "OrdersIdempotencyTable"
    legacy = TicketService(stack, "Legacy", table_name="legacy", table_logical_ids=("TicketsTable", "TicketsIdem"))
    assert logical_id(legacy.table) == "TicketsTable"
    from constructs import Construct

    with pytest.raises(ValueError, match=r"OrdersIdempotencyTable, OrdersTable are taken by Shop/Orders"):
        TicketService(Construct(stack, "Nested"), "Orders", table_name="other")


def test_grant_issue_needs_an_aws_iam_url():
    stack = _stack()
    public = TicketService(stack, "Public", auth="NONE", strict_keys=True)
    with pytest.raises(ValueError, match="grant_issue needs auth AWS_IAM"):
        public.grant_issue(iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal()))


def test_init_refuses_without_cdk_json_or_over_an_existing_ledger(tmp_path, capsys):
    from tickets_cdk.__main__ import main

    assert main(["init", "--dir", str(tmp_path)]) == 2
    assert "cdk.json: not found; run init in the directory of the app's cdk.json" in capsys.readouterr().err
    (tmp_path / "cdk.json").write_text('{"app": "false"}')
    (tmp_path / "tickets.lock.json").write_text("kept")
    assert main(["init", "--dir", str(tmp_path)]) == 2
    assert "a ledger exists already; it is never replaced" in capsys.readouterr().err
    assert (tmp_path / "tickets.lock.json").read_text() == "kept"


# --- the app-level ledger check, in process -----------------------------------------------------


def _shop_app(tmp_path: Path, us_counters: dict | None = None, us_series: dict | None = None) -> App:
    app = App(outdir=str(tmp_path / "out"), context={LEDGER_PATH_CONTEXT: str(tmp_path / "tickets.lock.json")})
    orders = {"table_name": "shop-orders", "region_slots": 2, "counters": {"orders": {"start": 5000}}}
    TicketService(_stack(app=app), "Orders", region_slot=0, **orders)
    us_props = {**({"counters": us_counters} if us_counters is not None else {})}
    if us_series is not None:
        us_props["series"] = us_series
    TicketService(_stack(app=app, name="Us", region="us-east-1"), "Orders", region_slot=1, **{**orders, **us_props})
    return app


@pytest.mark.slow
def test_one_service_in_two_regions_is_one_ledger_entry_and_must_agree_on_its_numbering(tmp_path):
    ledger = tmp_path / "tickets.lock.json"
    write_ledger_file(
        ledger,
        record_services(
            None,
            {
                "shop-orders": parse_config(
                    {
                        "tableName": "shop-orders",
                        "regionSlots": 2,
                        "regions": {"eu-west-1": 0, "us-east-1": 1},
                        "counters": {"orders": {"start": 5000}},
                    }
                )
            },
        ),
    )
    version = read_ledger_file(ledger).version
    assembly = _shop_app(tmp_path).synth()
    outputs = {
        stack.stack_name: stack.template["Outputs"]["TicketsLedgerVersion"]["Value"] for stack in assembly.stacks
    }
    assert outputs == {"Shop": version, "Us": version}
    assert read_ledger_file(ledger).version == version  # nothing new: nothing written

    with pytest.raises(Exception, match=r"share the table name 'shop-orders'.*their counters differ"):
        _shop_app(tmp_path / "differ", us_counters={"orders": {"start": 1}}).synth()
    # Series are recorded per service too: a second region's series may not differ unseen.
    with pytest.raises(Exception, match=r"share the table name 'shop-orders'.*their series differ"):
        _shop_app(tmp_path / "series", us_series={"inv": {"format": "INV/{series}/{n}"}}).synth()


@pytest.mark.slow
def test_staging_and_production_in_one_app_are_one_service_with_both_accounts_recorded(tmp_path):
    """The same service in one region, in two accounts (one stack each): its tables are two deployments
    of one numbering, and the ledger records both accounts on the region's slot."""
    ledger = tmp_path / "tickets.lock.json"
    config = {"tableName": "shop-orders", "regions": {"eu-west-1": 0}, "counters": {"orders": {"start": 5000}}}
    write_ledger_file(ledger, record_services(None, {"shop-orders": parse_config(config)}))
    app = App(outdir=str(tmp_path / "out"), context={LEDGER_PATH_CONTEXT: str(ledger)})
    for name, account in (("Staging", "111111111111"), ("Production", "222222222222")):
        stack = Stack(app, name, env=Environment(account=account, region="eu-west-1"))
        TicketService(stack, "Orders", table_name="shop-orders", counters={"orders": {"start": 5000}})
    app.synth()
    (slot,) = read_ledger_file(ledger).services["shop-orders"].slots.values()
    assert (slot.region, slot.accounts, slot.retired) == ("eu-west-1", ("111111111111", "222222222222"), False)


class _Refuses:
    def validate(self):
        return ["this construct refuses"]


@pytest.mark.slow
def test_the_ledger_is_written_only_when_the_whole_app_synthesises(tmp_path):
    """A change the ledger accepts (a new counter) is recorded only if nothing else in the app stops synthesis."""
    import jsii
    from constructs import Construct, IValidation

    ledger = tmp_path / "tickets.lock.json"
    write_ledger_file(
        ledger,
        record_services(None, {"shop-orders": parse_config({"tableName": "shop-orders", "regions": {"eu-west-1": 0}})}),
    )
    before = ledger.read_bytes()
    app = App(outdir=str(tmp_path / "out"), context={LEDGER_PATH_CONTEXT: str(ledger)})
    stack = _stack(app=app)
    TicketService(stack, "Orders", table_name="shop-orders", counters={"orders": {"start": 1}})
    Construct(stack, "Other").node.add_validation(jsii.implements(IValidation)(_Refuses)())
    with pytest.raises(Exception, match="this construct refuses"):
        app.synth()
    assert ledger.read_bytes() == before

    app = App(outdir=str(tmp_path / "out2"), context={LEDGER_PATH_CONTEXT: str(ledger)})
    TicketService(_stack(app=app), "Orders", table_name="shop-orders", counters={"orders": {"start": 1}})
    app.synth()
    assert set(read_ledger_file(ledger).services["shop-orders"].counters) == {"orders"}


# --- a user's app, from the wheel ---------------------------------------------------------------


@pytest.fixture(scope="module")
def user_python() -> Path:
    return installed_python(extras=["cdk"])


def _copy_example(tmp_path: Path, name: str) -> Path:
    copy = tmp_path / name
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("cdk.out", "__pycache__"))
    return copy


def _templates(app_dir: Path) -> dict[str, dict]:
    return {
        path.name.removesuffix(".template.json"): json.loads(path.read_text())
        for path in (app_dir / "cdk.out").glob("*.template.json")
    }


def _resources(template: dict, kind: str) -> dict[str, dict]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


@pytest.mark.slow
@pytest.mark.installs
def test_the_wheel_installs_only_tickets_names_and_everything_it_reads():
    wheel = built_wheel()
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"tickets", "tickets_cdk", "tickets_deploy", "tickets_local", "tickets_admin"}
    assert "tickets_local/openapi_parts.json" in names and "tickets/handler.py" in names
    # Exactly the packages' files in this checkout: nothing stale, nothing left out.
    tracked = subprocess.run(
        ["git", "ls-files", "lambda_src/tickets", *sorted(top_level - {"tickets"})],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    shipped = {name.removeprefix("lambda_src/") for name in tracked if Path(name).suffix in (".py", ".json", ".typed")}
    assert {name for name in names if not name.split("/")[0].endswith(".dist-info")} == shipped
    assert wheel.name.startswith("tickets_server-" + tickets.__version__)


@pytest.mark.slow
@pytest.mark.installs
def test_the_example_app_synthesises_from_the_installed_wheel(user_python, tmp_path):
    app_dir, done = synthesised_example()  # the copy test_checkov.py reads too
    assert done.returncode == 0, done.stderr[-3000:]
    # The CDK's built-in CloudFormation validation ran (the app has no other plugin to write the report), as at a
    # user's synthesis, and found nothing: no warning for the user to read.
    assert validation_findings(app_dir / "cdk.out") == []
    ledger_before = (EXAMPLE / "tickets.lock.json").read_bytes()  # the copy's, before synthesis
    # The installed copy, not the repository's.
    where = subprocess.run(
        [str(user_python), "-c", "import tickets_cdk, tickets; print(tickets_cdk.__file__, tickets_cdk.__version__)"],
        env=environment(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert Path(where[0]).is_relative_to(user_python.parent.parent) and where[1] == tickets.__version__
    # What the local server reads ships inside its package: the API document it builds is the repository's.
    served = subprocess.run(
        [str(user_python), "-m", "tickets_local.openapi"],
        env=environment(),
        cwd=tmp_path,
        capture_output=True,
        check=True,
    ).stdout
    assert served == (ROOT / "openapi.json").read_bytes()
    assert (app_dir / "tickets.lock.json").read_bytes() == ledger_before  # nothing new to record

    templates = _templates(app_dir)
    assert set(templates) == {"Shop", "ShopUs"}
    shop, shop_us = templates["Shop"], templates["ShopUs"]
    # Stable logical ids from the constructs' ids; one table per service and region, none shared.
    tables = {name: r["Properties"].get("TableName") for name, r in _resources(shop, "AWS::DynamoDB::Table").items()}
    assert tables == {
        "OrdersTable": "shop-order-numbers",
        "OrdersIdempotencyTable": None,
        "InvoicesTable": "shop-invoice-numbers",
        "InvoicesIdempotencyTable": None,
    }
    assert {n: r["Properties"].get("TableName") for n, r in _resources(shop_us, "AWS::DynamoDB::Table").items()} == {
        "OrdersTable": "shop-order-numbers",
        "OrdersIdempotencyTable": None,
    }
    for template in (shop, shop_us):
        for table in _resources(template, "AWS::DynamoDB::Table").values():
            assert table["DeletionPolicy"] == "Retain" and table["Properties"]["DeletionProtectionEnabled"] is True

    # Each function: its own table, its own metrics service, its region's slot.
    functions = {}
    for template, stack in ((shop, "Shop"), (shop_us, "ShopUs")):
        for name, function in _resources(template, "AWS::Lambda::Function").items():
            variables = function["Properties"].get("Environment", {}).get("Variables", {})
            if "TICKETS_SETTINGS" in variables:
                settings = json.loads(variables["TICKETS_SETTINGS"])
                functions[(stack, name)] = (
                    variables["TICKETS_TABLE"]["Ref"],
                    variables["POWERTOOLS_SERVICE_NAME"],
                    settings["regionSlot"],
                    sorted(settings["counters"]),
                )
    assert sorted(functions.values()) == [
        ("InvoicesTable", "shop-invoice-numbers", 0, ["credit-notes", "invoices-2026"]),
        ("OrdersTable", "shop-order-numbers", 0, ["orders"]),
        ("OrdersTable", "shop-order-numbers", 1, ["orders"]),
    ]
    # The alarms watch the invoices service's metrics only.
    dimensions = [
        {d["Name"]: d["Value"] for d in alarm["Properties"]["Dimensions"]}
        for alarm in _resources(shop, "AWS::CloudWatch::Alarm").values()
        if alarm["Properties"].get("Namespace") == "Tickets"
    ]
    assert dimensions and all(d["service"] == "shop-invoice-numbers" for d in dimensions)

    # grant_issue: both invoke actions, each only through the URL, on each service's function.
    (checkout_policy,) = [
        policy
        for name, policy in _resources(shop, "AWS::IAM::Policy").items()
        if name.startswith("CheckoutServiceRole")
    ]
    statements = checkout_policy["Properties"]["PolicyDocument"]["Statement"]
    granted = sorted((s["Resource"]["Fn::GetAtt"][0], s["Action"], json.dumps(s["Condition"])) for s in statements)
    ticket_functions = sorted(name for stack, name in functions if stack == "Shop")
    assert granted == sorted(
        (function, action, condition)
        for function in ticket_functions
        for action, condition in (
            ("lambda:InvokeFunctionUrl", json.dumps({"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}})),
            ("lambda:InvokeFunction", json.dumps({"Bool": {"lambda:InvokedViaFunctionUrl": "true"}})),
        )
    )

    # Every stack names the ledger version it was synthesised with.
    version = json.loads(ledger_before)["versions"][-1]["id"]
    assert {name: t["Outputs"]["TicketsLedgerVersion"]["Value"] for name, t in templates.items()} == {
        "Shop": version,
        "ShopUs": version,
    }

    # The code asset: the tickets package only.
    (asset,) = [path for path in (app_dir / "cdk.out").glob("asset.*") if path.is_dir()]
    files = sorted(path for path in asset.rglob("*") if path.is_file())
    assert files and all(path.relative_to(asset).parts[0] == "tickets" for path in files)
    assert not any(path.suffix == ".pyc" for path in files)

    # cfn-lint, each template against its own region's schemas.
    errors = {
        stack: cfn_lint_errors(template, region)
        for (stack, template), region in zip(sorted(templates.items()), ["eu-west-1", "us-east-1"])
    }
    assert errors == {"Shop": [], "ShopUs": []}


@pytest.mark.slow
@pytest.mark.installs
def test_the_example_app_is_refused_a_change_a_missing_ledger_and_an_agnostic_stack(user_python, tmp_path):
    changed = _copy_example(tmp_path, "changed")
    ledger_before = (changed / "tickets.lock.json").read_bytes()
    source = (changed / "app.py").read_text()
    (changed / "app.py").write_text(source.replace('{"orders": {"start": 5000}}', '{"orders": {"start": 1}}'))
    refused = synth_app(user_python, changed)
    assert refused.returncode != 0
    assert "refused by the deployment ledger" in refused.stderr
    said = (
        "TicketService Shop/Orders, ShopUs/Orders, prop counters['orders'].start: the ledger records 5000, "
        "the app says 1."
    )
    assert said in refused.stderr and refused.stderr.count("the ledger records 5000") == 1
    assert "Traceback" not in refused.stderr
    assert (changed / "tickets.lock.json").read_bytes() == ledger_before
    assert not list((changed / "cdk.out").glob("*.template.json"))

    missing = _copy_example(tmp_path, "missing")
    (missing / "tickets.lock.json").unlink()
    refused = synth_app(user_python, missing)
    assert refused.returncode != 0
    assert "no ledger" in refused.stderr and "python -m tickets_cdk init" in refused.stderr
    assert not (missing / "tickets.lock.json").exists() and not list((missing / "cdk.out").glob("*.template.json"))

    agnostic = _copy_example(tmp_path, "agnostic")
    source = (agnostic / "app.py").read_text()
    assert 'env=cdk.Environment(region="us-east-1")' in source
    (agnostic / "app.py").write_text(source.replace(', env=cdk.Environment(region="us-east-1")', ""))
    refused = synth_app(user_python, agnostic)
    assert refused.returncode != 0
    assert "ShopUs is environment-agnostic" in refused.stderr and "Give the stack a region" in refused.stderr
    assert not list((agnostic / "cdk.out").glob("*.template.json"))

    # The way out of a missing ledger for a new deployment: init writes what the app declares, as committed.
    done = subprocess.run(
        [str(user_python), "-m", "tickets_cdk", "init", "--app", f"{user_python} app.py"],
        cwd=missing,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote the ledger of 2 service(s)" in done.stdout
    assert (
        read_ledger_file(missing / "tickets.lock.json").services
        == read_ledger_file(EXAMPLE / "tickets.lock.json").services
    )


def _docs_example_app() -> str:
    guide = (ROOT / "docs" / "how-to" / "use-the-construct.md").read_text(encoding="utf-8")
    start = guide.index("```python\nimport aws_cdk as cdk") + len("```python\n")
    return guide[start : guide.index("```", start)]


def test_the_construct_how_to_shows_the_example_app_as_it_is():
    """docs/how-to/use-the-construct.md's complete app is examples/cdk-app/app.py's code, which the tests synthesise."""
    assert _docs_example_app() in (EXAMPLE / "app.py").read_text(encoding="utf-8")


def _cdk_modules_used(*sources: str) -> set[str]:
    """Every aws_cdk module these sources import: `aws_cdk` itself and each `aws_cdk.X` named in an import."""
    used = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                used |= {alias.name for alias in node.names if alias.name.split(".")[0] == "aws_cdk"}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                used.add(node.module)
                if node.module == "aws_cdk":  # `from aws_cdk import aws_kms as kms` imports a module too
                    used |= {f"aws_cdk.{alias.name}" for alias in node.names if alias.name.startswith("aws_")}
    return used | {"aws_cdk", "aws_cdk._jsii"}


def _mypy_config_following(modules: set[str]) -> str:
    """pyproject.toml's mypy settings (what `make lint` runs), and of aws-cdk-lib only the given modules followed.
    aws_cdk's __init__ names all of its 300 modules for type checkers: following them all is over a minute of
    CPU on a fresh clone. The others are skipped (their names typed Any): what the app and the construct call is
    each defined in a followed module, so every argument they pass is still checked against the CDK's types."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    overrides = [
        *settings.pop("overrides"),
        {"module": ["aws_cdk.*"], "follow_imports": "skip"},
        {"module": sorted(modules), "follow_imports": "normal"},  # named modules win over the pattern
    ]
    lines = ["[mypy]", *(f"{name} = {value}" for name, value in settings.items())]
    for override in overrides:
        lines.append(f"[mypy-{','.join(override.pop('module'))}]")
        lines += [f"{name} = {value}" for name, value in override.items()]
    return "\n".join(lines) + "\n"


def test_the_construct_how_tos_example_app_type_checks_under_mypy_strict(tmp_path):
    """A user's type checker accepts the app the guide shows, with the construct's typed props: mypy --strict with
    pyproject.toml's settings, as `make lint` runs it, following every aws_cdk module the app and the construct
    import (_mypy_config_following); an argument of the wrong type to the construct or to the CDK fails it."""
    app = _docs_example_app()
    construct = [path.read_text(encoding="utf-8") for path in (ROOT / "tickets_cdk").glob("*.py")]
    config = tmp_path / "mypy.ini"
    config.write_text(_mypy_config_following(_cdk_modules_used(app, *construct)), encoding="utf-8")
    wrong = {
        "shop.py": app,
        "wrong_construct_prop.py": app.replace("log_retention_days=365", 'log_retention_days="365"'),
        "wrong_cdk_argument.py": app.replace("enable_key_rotation=True", 'enable_key_rotation="yes"'),
        "wrong_grantee.py": app.replace("orders.grant_issue(checkout)", "orders.grant_issue(invoice_key)"),
    }
    assert len(set(wrong.values())) == len(wrong), "each wrong app differs from the guide's: update the replacements"
    for name, source in wrong.items():
        (tmp_path / name).write_text(source, encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(tmp_path / "cache")]
        + [str(tmp_path / name) for name in wrong],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    errors = [line.split(":")[0] for line in checked.stdout.splitlines() if ": error:" in line]
    # The guide's app has no error; each wrong one exactly one (mypy checks them as separate modules).
    assert sorted(Path(path).name for path in errors) == sorted(name for name in wrong if name != "shop.py"), (
        checked.stdout[-3000:]
    )


def test_the_ledger_is_found_beside_the_app_s_cdk_json_wherever_synthesis_runs_from(tmp_path, monkeypatch):
    import sys

    from tickets_cdk.ledger_check import find_ledger

    app_dir, elsewhere = tmp_path / "shop" / "infra", tmp_path / "other"
    app_dir.mkdir(parents=True)
    elsewhere.mkdir()
    (tmp_path / "shop" / "cdk.json").write_text("{}")
    (elsewhere / "cdk.json").write_text("{}")  # another app's: not the one whose script runs
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(app_dir / "app.py"), raising=False)
    assert find_ledger(App()) == tmp_path / "shop" / "tickets.lock.json"
    # No script of the app's (python -c, or a test runner's entry point): the working directory's.
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(Path(sys.prefix) / "bin" / "pytest"), raising=False)
    assert find_ledger(App()) == elsewhere / "tickets.lock.json"
    named = tmp_path / "named.json"
    assert find_ledger(App(context={LEDGER_PATH_CONTEXT: str(named)})) == named
