"""`python tools/synth_summary.py cdk.out`: each stack `cdk synth` wrote, its region, template, outputs and ledger
version (`make synth`); with `--destroy STACK`, the stack `make destroy` deletes, or why it cannot."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tickets_deploy.ledger import LEDGER_VERSION_OUTPUT


def stacks(assembly: Path) -> list[dict[str, Any]]:
    """Each stack of the assembly, nested ones included (ledger_version None: not a Tickets stack)."""
    manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = []
    for artifact_id, artifact in sorted(manifest.get("artifacts", {}).items()):
        properties = artifact.get("properties", {})
        if artifact.get("type") == "cdk:cloud-assembly":
            found += stacks(assembly / properties["directoryName"])
        elif artifact.get("type") == "aws:cloudformation:stack":
            template = assembly / properties["templateFile"]
            outputs = json.loads(template.read_text(encoding="utf-8")).get("Outputs", {})
            found.append(
                {
                    "name": properties.get("stackName", artifact_id),
                    "region": artifact.get("environment", "").rsplit("/", 1)[-1],
                    "template": template,
                    "outputs": sorted(outputs),
                    "ledger_version": outputs.get(LEDGER_VERSION_OUTPUT, {}).get("Value"),
                }
            )
    return found


def summary(assembly: Path, found: list[dict[str, Any]]) -> str:
    versions = sorted({stack["ledger_version"] for stack in found if stack["ledger_version"] is not None})
    ledger = f"ledger version {', '.join(versions)}" if versions else "no Tickets stack"
    lines = [f"{assembly}: {len(found)} stack(s), {ledger}"]
    for stack in found:
        lines += [
            f"  {stack['name']} ({stack['region']}): {stack['template']}",
            f"    outputs: {', '.join(stack['outputs']) or 'none'}",
        ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    assembly = Path(argv[0] if argv else "cdk.out")
    try:
        found = stacks(assembly)
    except (OSError, ValueError, KeyError) as err:
        print(f"{assembly}: cannot read the cloud assembly ({err}); synthesise first (make synth)", file=sys.stderr)
        return 1
    if argv[1:2] != ["--destroy"]:
        print(summary(assembly, found))
        return 0
    regions = {stack["name"]: stack["region"] for stack in found}
    name = argv[2]
    if name not in regions:  # said before the CDK CLI asks
        print(
            f"make destroy: the app declares no stack {name} (its stacks: {', '.join(regions) or 'none'}); the CDK CLI "
            "destroys only the app's stacks. A region removed from cdk.json: put it back on its slot, make destroy, "
            "then remove it",
            file=sys.stderr,
        )
        return 1
    print(
        f"make destroy: the stack {name} in {regions[name]} (its function, URL, alarms and dashboard); its tables and "
        "log group are retained (docs/how-to/deploy.md#destroy)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
