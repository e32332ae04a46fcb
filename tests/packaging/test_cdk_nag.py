"""cdk-nag, the gate a platform team's CDK app runs, on a user's app built from the installed wheel: examples/cdk-app
(two services, one with a customer-managed key and access rules, in two regions, with alarms and a dashboard)
and a stack with the construct's other options (series, a public URL with reserved concurrency, callers, an
opaque counter, whose function may read its keys' SSM parameter),
checked by cdk-nag's AwsSolutions pack under each major a user may have: cdk-nag 2 (an Aspect: findings are
error and warning annotations) and cdk-nag 3 (a validation plugin: findings are in the validation report).
The construct carries its own suppressions with reasons (tickets_cdk/suppressions.py), so no finding is on
its resources, and the user's app needs none of its own for them; the shop's own checkout function (an older
runtime, a managed policy) is found under both majors, so the checks did run.

cdk-nag 3 is the reference app's (requirements.txt); cdk-nag 2 is pinned in requirements-cdk-nag-2.txt beside
this file. Each is installed in an environment layered on .venv-examples (tests/installed.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from installed import EXAMPLE, REPO, layered_python, synth_app, validation_findings

pytestmark = [pytest.mark.slow, pytest.mark.installs]

# How a user's app adds the AwsSolutions checks, per major (cdk-nag 3 runs only as a validation plugin).
REGISTER = {
    "2": "cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))",
    "3": "cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))",
}
# The rest of the construct's options, in a stack of their own; the ledger check records its new services.
MORE_OPTIONS = """
more = cdk.Stack(app, "ShopMore", env=cdk.Environment(region="eu-west-1"))
TicketService(
    more, "Tokens", table_name="shop-tokens", auth="NONE", reserved_concurrency=5, strict_keys=True,
    counters={"tokens": {"start": 1}, "numbers": {"max": 99999999, "opaque": {"width": 10, "alphabet": "digits"}}},
)
books = TicketService(
    more, "Books", table_name="shop-books", callers=["111122223333"], access={"111122223333": {"series": ["*"]}},
    series={"invoices": {"start": 1, "period": "yearly"}},
)
TicketAlarms(more, "BooksAlarms", service=books, alarm_email="ops@shop.example")
"""
# The shop's own resources' findings (not the construct's): its checkout function, as examples/cdk-app writes it.
USERS_OWN = {
    "AwsSolutions-L1 at Shop/Checkout/Resource",
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole] at "
    "Shop/Checkout/ServiceRole/Resource",
}


def pin(path: Path) -> str:
    """The `cdk-nag==X` line of a requirements file."""
    return next(line.split("#")[0].strip() for line in path.read_text().splitlines() if line.startswith("cdk-nag=="))


PINS = {
    "2": pin(Path(__file__).with_name("requirements-cdk-nag-2.txt")),
    "3": pin(REPO / "requirements.txt"),
}


def the_users_app(tmp_path: Path, major: str) -> Path:
    """A copy of examples/cdk-app (its ledger too), with MORE_OPTIONS and the checks of this cdk-nag major."""
    app_dir = tmp_path / "shop"
    shutil.copytree(EXAMPLE, app_dir, ignore=shutil.ignore_patterns("cdk.out", "__pycache__"))
    source = (app_dir / "app.py").read_text()
    assert source.count("\napp.synth()") == 1
    checks = f"from cdk_nag import AwsSolutionsChecks\n\n{REGISTER[major]}\n"
    (app_dir / "app.py").write_text(source.replace("\napp.synth()", f"{MORE_OPTIONS}{checks}app.synth()"))
    return app_dir


def findings(assembly: Path, major: str) -> set[str]:
    """Every unsuppressed AwsSolutions finding, as `rule[finding] at construct path`."""
    if major == "2":  # error and warning annotations, in each stack's metadata file
        return {
            f"{entry['data'].split(': ', 1)[0]} at {path.lstrip('/')}"
            for metadata in assembly.glob("*.metadata.json")
            for path, entries in json.loads(metadata.read_text()).items()
            for entry in entries
            if entry["type"] in ("aws:cdk:error", "aws:cdk:warning") and entry["data"].startswith("AwsSolutions-")
        }
    return set(validation_findings(assembly))


@pytest.mark.parametrize("major", sorted(PINS))
def test_a_users_app_has_no_cdk_nag_finding_on_the_constructs_resources(tmp_path, major):
    python = layered_python(f"cdk-nag-{major}", [PINS[major]], extras=["cdk"])  # cdk-nag needs the CDK
    app_dir = the_users_app(tmp_path, major)
    synth = synth_app(python, app_dir)
    # cdk-nag 3 stops synthesis on the shop's own findings, after writing its report.
    assert synth.returncode == (0 if major == "2" else 1), synth.stderr[-3000:]
    assert "Traceback" not in synth.stderr or "ValidationFailed" in synth.stderr, synth.stderr[-3000:]
    assert findings(app_dir / "cdk.out", major) == USERS_OWN
