"""The reference app's stack: one region's deployment of cdk.json's config through tickets_cdk, checked by cdk-nag."""

from __future__ import annotations

from aws_cdk import Annotations, App, CfnOutput, Environment, Stack, Validations
from cdk_nag import AwsSolutionsChecks

from tickets_cdk import TicketAlarms, TicketDashboard, TicketService
from tickets_deploy.config import props_of
from tickets_deploy.environment import SERVICE_NAME
from tickets_deploy.schema import DeploymentConfig

# The tables' logical ids from before the app used the library: kept, so a deployed stack's tables are never replaced
LEGACY_TABLE_LOGICAL_IDS = ("TicketsTable", "TicketsIdempotencyTable")


def add_stacks(app: App, config: DeploymentConfig, account: str | None = None) -> dict[str, Stack]:
    """One stack per configured region, all checked by cdk-nag's AwsSolutions pack (an unsuppressed finding stops)."""
    stacks = {region: _region_stack(app, config, region, account) for region in config.regions}
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return stacks


def _region_stack(app: App, config: DeploymentConfig, region: str, account: str | None) -> Stack:
    slot = config.regions[region]
    stack = Stack(
        app,
        f"Tickets-{region}",
        env=Environment(account=account, region=region),
        description=f"Tickets ticket server, {region} (slot {slot})",
    )
    service = TicketService(
        stack,
        "Service",
        **props_of(config, region),
        service_name=SERVICE_NAME,
        table_logical_ids=LEGACY_TABLE_LOGICAL_IDS,
    )
    alarms = TicketAlarms(
        stack, "Alarms", service=service, alarm_email=config.alarm_email, alarm_days_left=config.alarm_days_left
    )
    dashboard = TicketDashboard(stack, "Dashboard", service=service, alarms=alarms)

    outputs = {
        "FunctionUrl": (service.url.url, "POST or GET {url}{key} for a ticket"),
        "TableName": (service.table.table_name, "The counter table"),
        "DashboardName": (dashboard.dashboard.dashboard_name, "The CloudWatch dashboard (its name is generated)"),
        "RegionSlot": (str(slot), f"This region's slot of {config.region_slots}"),
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
        CfnOutput(stack, name, value=value, description=description)
    _warn_about_public_access(stack, config)
    return stack


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
