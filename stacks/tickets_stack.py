"""One region's deployment: the service, its alarms, its dashboard and its outputs."""

from __future__ import annotations

from aws_cdk import Annotations, App, Aspects, CfnOutput, Environment, Stack
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from tickets_deploy.config import DeploymentConfig
from tickets_deploy.ledger import LEDGER_VERSION_OUTPUT

from .dashboard import TicketDashboard
from .monitoring import TicketAlarms
from .ticket_service import TicketService


class TicketsStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        region: str,
        ledger_version: str | None = None,
        **kwargs,
    ):
        super().__init__(scope, construct_id, **kwargs)
        service = TicketService(self, "Service", config=config, region=region)
        alarms = TicketAlarms(
            self,
            "Alarms",
            function=service.function,
            table=service.table,
            idempotency_table=service.idempotency_table,
            alarm_email=config.alarm_email,
        )
        TicketDashboard(
            self,
            "Dashboard",
            function=service.function,
            table_throttles=alarms.alarms["TableThrottles"].metric,
            idempotency_table_throttles=alarms.alarms["IdempotencyTableThrottles"].metric,
            alarms=list(alarms.alarms.values()),
            reserved_concurrency=config.reserved_concurrency,
        )

        CfnOutput(self, "FunctionUrl", value=service.url.url, description="POST or GET {url}{key} for a ticket")
        CfnOutput(self, "TableName", value=service.table.table_name, description="The counter table")
        CfnOutput(
            self,
            "RegionSlot",
            value=str(config.regions[region]),
            description=f"This region's slot of {config.region_slots}",
        )
        if service.invoke_policy is not None:
            CfnOutput(
                self,
                "InvokePolicyArn",
                value=service.invoke_policy.managed_policy_arn,
                description="Attach to a caller's role or user: lambda:InvokeFunctionUrl and lambda:InvokeFunction",
            )
            CfnOutput(
                self,
                "FunctionArn",
                value=service.function.function_arn,
                description="The Resource of a caller's own policy in another account (docs/callers.md)",
            )
        if ledger_version is not None:
            # make deploy reads it back (DescribeStacks) before deploying another version here
            # (tickets_deploy/predeploy.py, docs/operations.md#working-as-a-team).
            CfnOutput(
                self,
                LEDGER_VERSION_OUTPUT,
                value=ledger_version,
                description="The version of tickets.lock.json this stack was synthesised with",
            )
        _warn_about_public_access(self, config)


def _warn_about_public_access(stack: Stack, config: DeploymentConfig) -> None:
    if config.auth != "NONE":
        return
    if "*" in config.cors_origins:
        Annotations.of(stack).add_warning_v2(
            "tickets:public-cors-wildcard",
            'tickets.corsOrigins contains "*" with auth NONE: any web page, on any visitor\'s browser, can take '
            "tickets from this URL. List the origins that may call it instead.",
        )
    if not config.strict_keys:
        Annotations.of(stack).add_warning_v2(
            "tickets:public-any-key",
            "auth NONE with strictKeys false: anyone on the internet can create unlimited counters (one item "
            "each, billed to you). Set strictKeys true (only keys in tickets.counters and defaultKey are served) "
            "and reservedConcurrency to cap the function's cost.",
        )


def add_stacks(
    app: App, config: DeploymentConfig, account: str | None = None, ledger_version: str | None = None
) -> dict[str, TicketsStack]:
    """One stack per configured region, each pinned to its region, all checked by cdk-nag."""
    stacks = {
        region: TicketsStack(
            app,
            f"Tickets-{region}",
            config=config,
            region=region,
            ledger_version=ledger_version,
            env=Environment(account=account, region=region),
            description=f"Tickets ticket server, {region} (slot {slot})",
        )
        for region, slot in config.regions.items()
    }
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return stacks
