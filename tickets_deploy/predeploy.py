"""`python -m tickets_deploy predeploy`: what `make deploy` checks in AWS, read-only, after synthesis and before
CloudFormation starts (docs/how-to/deploy.md#before-cloudformation-starts)."""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickets.botocore_session import NO_CREDENTIALS, new_session
from tickets_deploy.ledger import LEDGER_FILE, LEDGER_VERSION_OUTPUT, LedgerError, LedgerFile, read_ledger_file

ClientFactory = Callable[[str, str], Any]  # (service, region) -> a botocore client; tests stub it (Stubber)
Report = Callable[[str], None]
POWERTOOLS_PARAMETERS = "/aws/service/powertools/"
READS = "cloudformation:DescribeStacks, cloudformation:DescribeStackResources and ssm:GetParameter"
_SSM_REFERENCE = re.compile(r"\{\{resolve:ssm:([A-Za-z0-9_./-]+)(?::[0-9]+)?\}\}")


@dataclass(frozen=True)
class AssemblyStack:
    name: str
    region: str
    ledger_version: str | None  # its TicketsLedgerVersion output; None: not a Tickets stack
    ssm_parameters: tuple[str, ...]


class PredeployError(Exception):
    """The cloud assembly or the ledger cannot be read: nothing was checked."""


def read_assembly(directory: Path) -> list[AssemblyStack]:
    """Every stack `cdk deploy --all --app DIRECTORY` deploys, nested assemblies (stages) included."""
    manifest_path = directory / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PredeployError(f"{manifest_path}: no cloud assembly; synthesise first (cdk synth)") from None
    except (OSError, ValueError) as err:
        raise PredeployError(f"{manifest_path}: cannot read it ({err}); synthesise again (cdk synth)") from None
    stacks = []
    for artifact_id, artifact in sorted(manifest.get("artifacts", {}).items()):
        properties = artifact.get("properties", {})
        if artifact.get("type") == "cdk:cloud-assembly":  # a nested assembly (a stage)
            stacks.extend(read_assembly(directory / properties["directoryName"]))
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        environment = artifact.get("environment", "")
        region = environment.rsplit("/", 1)[-1]
        if not environment.startswith("aws://") or region.startswith("unknown"):
            raise PredeployError(f"{artifact_id}: its environment {environment!r} names no region")
        template_text = (directory / properties["templateFile"]).read_text(encoding="utf-8")
        output = json.loads(template_text).get("Outputs", {}).get(LEDGER_VERSION_OUTPUT)
        stacks.append(
            AssemblyStack(
                name=properties.get("stackName", artifact_id),
                region=region,
                ledger_version=output["Value"] if output is not None else None,
                ssm_parameters=tuple(sorted(set(_SSM_REFERENCE.findall(template_text)))),
            )
        )
    return stacks


def check(stacks: list[AssemblyStack], ledger: LedgerFile, client: ClientFactory, report: Report = print) -> list[str]:
    """Every problem that must stop the deploy (empty: go ahead); `report` gets a line per finding."""
    problems: list[str] = []
    known = {version.id for version in ledger.versions}
    for stack in stacks:
        where = f"{stack.region}: stack {stack.name}"
        if stack.ledger_version in known:
            problems += _version_problems(where, stack, ledger, client, report, True)
        elif stack.ledger_version is not None:
            problems.append(
                f"{where}: cdk.out was synthesised with ledger version {stack.ledger_version}, which this checkout's "
                f"{LEDGER_FILE} (last version {ledger.version}) does not have: synthesise again, then deploy."
            )
    problems += _ledger_region_problems(stacks, ledger, client, report)
    for region, name in sorted({(stack.region, name) for stack in stacks for name in stack.ssm_parameters}):
        problems += _parameter_problems(region, name, client, report)
    return problems


def _ledger_region_problems(
    stacks: list[AssemblyStack], ledger: LedgerFile, client: ClientFactory, report: Report
) -> Iterator[str]:
    """Every region the ledger ever gave a slot (retired too: another line's version there could repeat this deploy's
    numbers) must run an ancestor of the version deployed, in the stack holding the service's table (its fixed name)."""
    deploying = sorted({stack.ledger_version for stack in stacks if stack.ledger_version is not None})
    if len(deploying) > 1:
        yield f"cdk.out holds stacks synthesised with ledger versions {', '.join(deploying)}: synthesise again."
        return
    if not deploying or deploying[0] not in {version.id for version in ledger.versions}:
        return  # no Tickets stack in this deploy, or its version is refused above
    checked = {(stack.region, stack.name) for stack in stacks}
    for table, service in sorted(ledger.services.items()):
        for slot, entry in sorted(service.slots.items()):
            where = f"{entry.region} (slot {slot}{', retired,' if entry.retired else ''} of {table})"
            try:
                answer = client("cloudformation", entry.region).describe_stack_resources(PhysicalResourceId=table)
                found = next((str(each["StackName"]) for each in answer.get("StackResources", [])), None)
            except Exception as err:  # noqa: BLE001 - every failure is reported, the deploy stops
                if not _missing(err):
                    failed = _failed(err, "cloudformation:DescribeStackResources")
                    yield f"{where}: cannot find the stack holding table {table} {failed}"
                    continue
                found = None
            if found is None:
                report(f"{where}: no stack holds table {table}: nothing of it runs there")
            elif (entry.region, found) not in checked:
                checked.add((entry.region, found))
                where = f"{where}: stack {found} (not in this deploy)"
                stack = AssemblyStack(found, entry.region, deploying[0], ())
                yield from _version_problems(where, stack, ledger, client, report, False)


def _version_problems(
    where: str, stack: AssemblyStack, ledger: LedgerFile, client: ClientFactory, report: Report, new: bool
) -> Iterator[str]:
    """The stack must run an ancestor of its ledger version, or nothing yet (`new`: the assembly deploys it)."""
    deploying = str(stack.ledger_version)
    try:
        deployed_stack = client("cloudformation", stack.region).describe_stacks(StackName=stack.name)["Stacks"][0]
    except Exception as err:  # noqa: BLE001 - every failure is reported, the deploy stops
        if _missing(err):
            report(
                f"{where}: not deployed yet; a first deploy of ledger version {deploying}"
                if new
                else f"{where}: the stack does not exist (deleted): nothing runs there"
            )
        else:
            yield f"{where}: cannot read the deployed stack {_failed(err, 'cloudformation:DescribeStacks')}"
        return
    status = deployed_stack.get("StackStatus", "")
    outputs = {output["OutputKey"]: output["OutputValue"] for output in deployed_stack.get("Outputs", [])}
    deployed = outputs.get(LEDGER_VERSION_OUTPUT)
    if status.endswith("_IN_PROGRESS"):
        yield f"{where}: {status}: another deploy is under way. Wait for it to end, then deploy again."
    elif deployed is None:
        report(f"{where}: deployed without a recorded ledger version ({status}); deploying version {deploying}")
    elif not ledger.is_ancestor(deployed, deploying):
        why = (
            f"{deployed} is newer than {deploying} in this checkout's history: pull main and synthesise again"
            if deployed in {version.id for version in ledger.versions}
            else f"{deployed} is not in this checkout's history: another branch recorded and deployed it, so neither "
            "change was checked after the other. Deploy from main only: pull main, merge that branch if it is not "
            "(docs/how-to/work-as-a-team.md)"
        )
        yield f"{where} runs ledger version {deployed}, which is not an ancestor of {deploying}, the version being " + (
            f"deployed: {why}."
        )
    elif not new:
        report(f"{where}: runs ledger version {deployed}, an ancestor of {deploying} (or the same)")
    else:
        same = "the version deployed" if deployed == deploying else f"a descendant of the deployed {deployed}"
        report(f"{where}: deploying ledger version {deploying}, {same}")


def _parameter_problems(region: str, name: str, client: ClientFactory, report: Report) -> Iterator[str]:
    try:
        client("ssm", region).get_parameter(Name=name)
    except Exception as err:  # noqa: BLE001 - every failure is reported, the deploy stops
        if _error_code(err) != "ParameterNotFound":
            yield f"{region}: cannot read SSM parameter {name} {_failed(err, 'ssm:GetParameter')}"
        elif name.startswith(POWERTOOLS_PARAMETERS):
            yield (
                f"{region}: SSM parameter {name} does not exist: Powertools has not published this layer release "
                "here. Pin the previous Powertools release (POWERTOOLS_VERSION in tickets_cdk/powertools.py, and "
                "in requirements-serve.txt) and deploy again (docs/how-to/deploy.md#before-cloudformation-starts)."
            )
        else:
            yield f"{region}: SSM parameter {name}, which a template resolves, does not exist: create it first."
        return
    report(f"{region}: SSM parameter {name} exists")


def _missing(err: Exception) -> bool:
    return _error_code(err) == "ValidationError" and "does not exist" in str(err)


def _error_code(err: Exception) -> str | None:
    response = getattr(err, "response", None)
    return response.get("Error", {}).get("Code") if isinstance(response, dict) else None


def _failed(err: Exception, action: str) -> str:
    return (
        f"({_error_code(err) or type(err).__name__}: {err}); the deploy check (python -m tickets_deploy predeploy) "
        f"needs {action} with the deploy's credentials"
    )


def main(argv: list[str] | None = None, client: ClientFactory | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tickets_deploy predeploy",
        description=f"{__doc__}\n\nReads AWS ({READS}); writes nothing. Exit status 1 lists every problem.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--assembly", type=Path, default=Path("cdk.out"), help="the cloud assembly (default: cdk.out)")
    parser.add_argument("--ledger", type=Path, default=Path(LEDGER_FILE), help="the ledger (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        stacks = read_assembly(args.assembly)
        ledger = read_ledger_file(args.ledger)
    except (PredeployError, LedgerError) as err:
        print(f"predeploy: {err}", file=sys.stderr)
        return 1
    if client is None:
        session = new_session()
        if session.get_credentials() is None:  # else every call fails alike, once per region
            print(
                f"predeploy: nothing was deployed: {NO_CREDENTIALS}; the check reads {READS} with them", file=sys.stderr
            )
            return 1
        client = functools.cache(lambda service, region: session.create_client(service, region_name=region))
    problems = check(stacks, ledger, client)
    if problems:
        print("predeploy: nothing was deployed:", *problems, sep="\n", file=sys.stderr)
        return 1
    print(f"predeploy: {len(stacks)} stack(s) and every region of {args.ledger} checked; cdk deploy may go ahead")
    return 0
