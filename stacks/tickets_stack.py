"""The reference app's stack: one region's deployment of cdk.json's config through tickets_cdk, checked by cdk-nag."""

from __future__ import annotations

from typing import Any

from aws_cdk import Annotations, App, CfnOutput, Environment, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from tickets_cdk import TicketAlarms, TicketDashboard, TicketService
from tickets_deploy.config import props_of
from tickets_deploy.environment import SERVICE_NAME
from tickets_deploy.schema import DeploymentConfig

# The tables' logical ids from before the app used the library: kept, so a deployed stack's tables are never replaced
LEGACY_TABLE_LOGICAL_IDS = ("TicketsTable", "TicketsIdempotencyTable")


class TicketsStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig, region: str, **kwargs: Any):
        super().__init__(scope, construct_id, **kwargs)
        service = TicketService(
            self,
            "Service",
            **props_of(config, region),
            service_name=SERVICE_NAME,
            table_logical_ids=LEGACY_TABLE_LOGICAL_IDS,
        )
        alarms = TicketAlarms(
            self, "Alarms", service=service, alarm_email=config.alarm_email, alarm_days_left=config.alarm_days_left
        )
        dashboard = TicketDashboard(self, "Dashboard", service=service, alarms=alarms)

        outputs = {
            "FunctionUrl": (service.url.url, "POST or GET {url}{key} for a ticket"),
            "TableName": (service.table.table_name, "The counter table"),
            "DashboardName": (dashboard.dashboard.dashboard_name, "The CloudWatch dashboard (its name is generated)"),
            "RegionSlot": (str(config.regions[region]), f"This region's slot of {config.region_slots}"),
        }
        if service.invoke_policy is not None:
            outputs["InvokePolicyArn"] = (
                service.invoke_policy.managed_policy_arn,
                "Attach to a caller's role or user: lambda:InvokeFunctionUrl and lambda:InvokeFunction",
            )
            outputs["FunctionArn"] = (
                service.function.function_arn,
                "The Resource of a caller's own policy in another account (docs/how-to/call-from-another-account.md)",
            )
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=description)
        _warn_about_public_access(self, config)


def _warn_about_public_access(stack: Stack, config: DeploymentConfig) -> None:
    if config.auth == "NONE" and "*" in config.cors_origins:
        Annotations.of(stack).add_warning_v2(
            "tickets:public-cors-wildcard",
            'tickets.corsOrigins contains "*" with auth NONE: any web page can take tickets from this URL in its '
            "visitors' browsers. List the origins that may call it instead.",
        )
    if config.auth == "NONE" and not config.strict_keys:
        Annotations.of(stack).add_warning_v2(
            "tickets:public-any-key",
            "auth NONE with strictKeys false: anyone can create unlimited counters, billed to you. Set strictKeys "
            "true (only tickets.counters and defaultKey are served) and reservedConcurrency to cap the cost.",
        )


def add_stacks(app: App, config: DeploymentConfig, account: str | None = None) -> dict[str, TicketsStack]:
    """One stack per configured region, all checked by cdk-nag's AwsSolutions pack (an unsuppressed finding stops)."""
    stacks = {
        region: TicketsStack(
            app,
            f"Tickets-{region}",
            config=config,
            region=region,
            env=Environment(account=account, region=region),
            description=f"Tickets ticket server, {region} (slot {slot})",
        )
        for region, slot in config.regions.items()
    }
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return stacks
