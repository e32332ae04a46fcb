"""TicketService: one Tickets deployment in its stack's region: the counter table, the idempotency table,
the function and its URL; grants, metrics and the ledger check come with it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import (
    CfnDynamicReference,
    CfnDynamicReferenceService,
    Duration,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from tickets import errors, tables, timing
from tickets_deploy import epochs
from tickets_deploy.config import (
    FIELDS,
    METRICS_NAMESPACE,
    ConfigError,
    DeploymentConfig,
    handler_environment,
    parse_props,
)
from tickets_deploy.ledger import LedgerError
from tickets_deploy.regions import refusal

from . import ledger_check
from .asset import HANDLER, asset_directory
from .ledger_check import find_ledger
from .powertools import layer_parameter

RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
METRIC_PERIOD = Duration.minutes(5)
# Every call tickets/series/store.py makes on the series table, and no other (no Scan, no BatchWriteItem):
# DeleteItem only removes a refused request's own request item.
SERIES_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:Query",
)
# The props that are fields of cdk.json's `tickets` object (tickets_deploy.config.FIELDS).
FIELD_PROPS = tuple(each.prop for each in FIELDS if each.owner == "TicketService")


class TicketService(Construct):
    """Tickets in the region of the enclosing stack.

    Every prop named after a cdk.json field (FIELD_PROPS: `counters`, `table_name`, `region_slot`,
    `region_slots`, `strict_keys`, `auth`, ...) takes that field's value in snake_case, with its default
    when omitted and its rule, as the README's configuration table lists them (tickets_deploy.config.FIELDS);
    `region_slot` is the slot of the stack's region. Besides them:

    - `service_name`: the `service` dimension of the function's metrics and logs (default: `table_name`),
      so two services never mix their metrics;
    - `table_logical_ids`: the CloudFormation logical ids of the counter and idempotency tables (default:
      the construct's id followed by `Table` and `IdempotencyTable`). They never change once deployed: a new
      id replaces the table;
    - `removal_policy`: of the tables and the function's log group (default RETAIN; a destroyed table
      starts every counter again at its start, so anything else is for throwaway stacks).

    With `series` configured (docs/series.md) it also creates the series table, `<table_name>-series`
    (logical id: the construct's id followed by `SeriesTable`), with the same protection, and grants the
    function only the calls the journal makes on it (tickets/series/store.py).

    The stack must name its region (env=Environment(region=...)): whether Function URLs exist there and
    which slot is this region's are decided at synthesis. Synthesis of the app checks every TicketService
    against the ledger beside the app's cdk.json (docs/cdk.md).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        counters: Mapping[str, Mapping[str, Any]] | None = None,
        table_name: str | None = None,
        region_slot: int | None = None,
        region_slots: int | None = None,
        strict_keys: bool | None = None,
        auth: str | None = None,
        default_key: str | None = None,
        max_block: int | None = None,
        idempotency_expiry_seconds: int | None = None,
        log_retention_days: int | None = None,
        cors_origins: Sequence[str] | None = None,
        reserved_concurrency: int | None = None,
        callers: Sequence[str] | None = None,
        compat: Mapping[str, str] | None = None,
        series: Mapping[str, Any] | None = None,
        service_name: str | None = None,
        table_logical_ids: tuple[str, str] | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ):
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        label = f"TicketService {self.node.path}"
        if Token.is_unresolved(stack.region):
            raise ValueError(
                f"{label}: the stack {stack.stack_name} is environment-agnostic (its region is unknown until "
                "deploy). Tickets needs the region at synthesis: Function URLs exist only in some regions, and "
                "the region's slot decides which tickets it issues. Give the stack a region: "
                "Stack(..., env=Environment(region='us-east-1'))."
            )
        why_not = refusal(stack.region)
        if why_not is not None:
            raise ValueError(f"{label}: the stack's region: {why_not}")
        props = {name: value for name, value in locals().items() if name in FIELD_PROPS}
        try:
            config = parse_props(props, stack.region, label)
        except ConfigError as err:
            raise ValueError(str(err)) from None
        if service_name is not None and not re.fullmatch(r"[A-Za-z0-9_.:-]{1,100}", service_name):
            raise ValueError(f"{label}: service_name: 1-100 of A-Z a-z 0-9 _ . : -, got {service_name!r}")
        self.config: DeploymentConfig = config
        self.region: str = stack.region
        self.region_slot: int = config.regions[stack.region]
        self.service_name: str = service_name or config.table_name
        prefix = _id_part(construct_id, label)
        table_ids = table_logical_ids or (f"{prefix}Table", f"{prefix}IdempotencyTable")
        ledger_check.register(self, table_ids)

        # A fixed name: after `cdk destroy` (the table is retained) a redeploy fails on the existing table
        # instead of starting a new, empty one where every counter would begin again at its start.
        self.table = _table(self, table_ids[0], tables.COUNTER_KEY, removal_policy, table_name=config.table_name)
        self.idempotency_table = _table(
            self, table_ids[1], tables.IDEMPOTENCY_KEY, removal_policy, time_to_live_attribute=tables.IDEMPOTENCY_TTL
        )
        # Only when series are configured (a deployment without them has no such table). A fixed name for
        # the same reason as the counter table's; a journal is kept for good: no TTL.
        self.series_table: dynamodb.Table | None = None
        if config.series:
            self.series_table = _table(
                self,
                f"{prefix}SeriesTable",
                tables.SERIES_PARTITION_KEY,
                removal_policy,
                table_name=f"{config.table_name}{tables.SERIES_TABLE_SUFFIX}",
                sort_key=dynamodb.Attribute(name=tables.SERIES_SORT_KEY, type=dynamodb.AttributeType.NUMBER),
            )

        # The audit trail of which request got which tickets: kept with the tables when the stack goes.
        self.log_group = logs.LogGroup(self, "FunctionLogs", removal_policy=removal_policy)
        # In days, as the config checked it against CloudWatch's periods (tickets_deploy.config.LOG_RETENTION_DAYS):
        # set on the resource itself so that list is the only one.
        self.log_group.node.default_child.retention_in_days = config.log_retention_days  # type: ignore[union-attr]
        role = iam.Role(
            self,
            "FunctionRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Tickets function: its own logs, traces and tables only",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[self.log_group.log_group_arn]
            )
        )
        self.role = role

        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=lambda_.Code.from_asset(asset_directory()),
            layers=[lambda_.LayerVersion.from_layer_version_arn(self, "Powertools", _powertools_layer_arn())],
            memory_size=256,
            timeout=Duration.seconds(timing.FUNCTION_TIMEOUT_SECONDS),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            role=role,
            reserved_concurrent_executions=config.reserved_concurrency,
            environment=handler_environment(
                _above_fences(self, config),
                stack.region,
                counter_table=self.table.table_name,
                idempotency_table=self.idempotency_table.table_name,
                service_name=self.service_name,
                series_table=self.series_table.table_name if self.series_table is not None else None,
            ),
        )
        # Only the calls the handler makes (store.py, Powertools idempotency), only on these tables.
        self.table.grant(role, "dynamodb:UpdateItem", "dynamodb:BatchGetItem")
        self.idempotency_table.grant(
            role, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"
        )
        if self.series_table is not None:
            self.series_table.grant(role, *SERIES_ACTIONS)

        cors = None
        if config.cors_origins:
            cors = lambda_.FunctionUrlCorsOptions(
                allowed_origins=list(config.cors_origins),
                allowed_methods=[lambda_.HttpMethod.GET, lambda_.HttpMethod.POST],
                allowed_headers=[
                    "content-type",
                    "accept",
                    "idempotency-key",
                    "authorization",
                    "x-amz-date",
                    "x-amz-security-token",
                    "x-amz-content-sha256",
                ],
                max_age=Duration.minutes(10),
            )
        self.url = self.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType[config.auth], cors=cors)
        self.invoke_policy = _invoke_policy(self, self.function) if config.auth == "AWS_IAM" else None
        for caller in config.callers:
            _admit_caller(self.function, caller)

    # --- grants -------------------------------------------------------------------------------------

    def grant_issue(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let `grantee` call the URL (SigV4): both actions a caller of an AWS_IAM Function URL needs,
        each only through the URL (docs/callers.md)."""
        if self.config.auth != "AWS_IAM":
            raise ValueError(
                f"TicketService {self.node.path}: grant_issue needs auth AWS_IAM; with auth {self.config.auth} "
                "the URL is public and there is nothing to grant"
            )
        url = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["lambda:InvokeFunctionUrl"],
            resource_arns=[self.function.function_arn],
            conditions={"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
        )
        invoke = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["lambda:InvokeFunction"],
            resource_arns=[self.function.function_arn],
            conditions={"Bool": {"lambda:InvokedViaFunctionUrl": "true"}},
        )
        return url.combine(invoke)

    # --- metrics ------------------------------------------------------------------------------------

    def metric(self, metric_name: str, *, code: str | None = None, **options: Any) -> cloudwatch.Metric:
        """One of the handler's own metrics (namespace Tickets, this service's `service` dimension)."""
        dimensions = {"service": self.service_name, **({"code": code} if code else {})}
        return cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=metric_name,
            dimensions_map=dimensions,
            **{"period": METRIC_PERIOD, "statistic": "Sum", **options},
        )

    def metric_tickets_issued(self, **options: Any) -> cloudwatch.Metric:
        """Tickets handed out (a block of N counts N), summed."""
        return self.metric("TicketsIssued", **options)

    def metric_errors(self, code: str = "internal_error", **options: Any) -> cloudwatch.Metric:
        """Answers with the error `code` (tickets.errors; default internal_error: a bug), summed."""
        return self.metric("Errors", code=code, **options)

    def metric_counter_near_max(self, **options: Any) -> cloudwatch.Metric:
        """Blocks issued past 90% of a counter's max; the function's logs name the key."""
        return self.metric("CounterNearMax", **options)

    def metric_series(self, metric_name: str = "SeriesIssued", **options: Any) -> cloudwatch.MathExpression:
        """`SeriesIssued` or `SeriesVoided`, one line per key and series (series names follow the periods, so
        a SEARCH finds them rather than a list fixed at synthesis)."""
        search = (
            f'SEARCH(\'{{{METRICS_NAMESPACE},key,series,service}} MetricName="{metric_name}" '
            f"service=\"{self.service_name}\"', 'Sum', {int(options.pop('period', METRIC_PERIOD).to_seconds())})"
        )
        return cloudwatch.MathExpression(expression=search, using_metrics={}, label="", **options)

    def metric_table_throttles(self) -> cloudwatch.MathExpression:
        """Throttled requests on the counter table, over every operation the handler calls on it."""
        return _throttled_requests(self.table, ["UpdateItem", "BatchGetItem"])

    def metric_idempotency_table_throttles(self) -> cloudwatch.MathExpression:
        """Throttled requests on the idempotency table, over every operation Powertools calls on it."""
        return _throttled_requests(self.idempotency_table, ["GetItem", "PutItem", "UpdateItem", "DeleteItem"])


def error_codes() -> list[str]:
    """Every `code` the handler can put on its Errors metric: one per error class in tickets.errors."""
    return sorted(
        {
            member.code
            for member in vars(errors).values()
            if isinstance(member, type) and issubclass(member, errors.TicketsError)
        }
    )


def _id_part(construct_id: str, label: str) -> str:
    """The construct's id as the start of a CloudFormation logical id (letters and digits only)."""
    part = re.sub(r"[^A-Za-z0-9]", "", construct_id)
    if not part:
        raise ValueError(f"{label}: the construct id needs a letter or digit (the tables' logical ids start with it)")
    return part


def _powertools_layer_arn() -> str:
    """The layer of the pinned Powertools release (POWERTOOLS_VERSION), for this runtime and architecture: a
    dynamic reference CloudFormation resolves from Powertools' public SSM parameter in the stack's region."""
    parameter = layer_parameter(RUNTIME.name, ARCHITECTURE.name)
    return CfnDynamicReference(CfnDynamicReferenceService.SSM, parameter).to_string()


def _invoke_policy(scope: Construct, function: lambda_.IFunction) -> iam.ManagedPolicy:
    """What a caller of the AWS_IAM Function URL needs, and nothing else: function URLs created since
    October 2025 require both actions. Attached to callers by the operator (see README)."""
    return iam.ManagedPolicy(
        scope,
        "InvokePolicy",
        description="Call the Tickets Function URL (SigV4)",
        statements=[
            iam.PolicyStatement(
                actions=["lambda:InvokeFunctionUrl"],
                resources=[function.function_arn],
                conditions={"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
            ),
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[function.function_arn],
                conditions={"Bool": {"lambda:InvokedViaFunctionUrl": "true"}},
            ),
        ],
    )


def _admit_caller(function: lambda_.Function, caller: str) -> None:
    """The function's side of a call from another account (docs/callers.md): both actions a caller of the
    AWS_IAM URL needs, each only through the URL. The caller's account must allow them too."""
    principal = iam.AccountPrincipal(caller) if caller.isdigit() else iam.ArnPrincipal(caller)
    name = caller.replace("/", "%")  # a construct id has no "/"; IAM names have no "%"
    function.add_permission(
        f"InvokeUrl {name}",
        principal=principal,
        action="lambda:InvokeFunctionUrl",
        function_url_auth_type=lambda_.FunctionUrlAuthType.AWS_IAM,
    )
    function.add_permission(
        f"InvokeViaUrl {name}", principal=principal, action="lambda:InvokeFunction", invoked_via_function_url=True
    )


def _table(
    scope: Construct, logical_id: str, partition_key: str, removal_policy: RemovalPolicy, **options: Any
) -> dynamodb.Table:
    """A table with point-in-time recovery, deletion protection (unless DESTROY) and this logical id."""
    table = dynamodb.Table(
        scope,
        logical_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        # Protected unless the stack is to be destroyed with its tables (removal_policy DESTROY).
        deletion_protection=removal_policy != RemovalPolicy.DESTROY,
        removal_policy=removal_policy,
        **options,
    )
    table.node.default_child.override_logical_id(logical_id)  # type: ignore[union-attr]
    return table


def _throttled_requests(table: dynamodb.Table, operations: list[str]) -> cloudwatch.MathExpression:
    """Throttled requests of these operations, summed. DynamoDB publishes ThrottledRequests only for an
    operation that was throttled, and `a + b` has no value where either series has none (CDK's
    metric_throttled_requests_for_operations sums that way): each term is filled with 0 first."""
    terms = {
        operation.lower(): table.metric_throttled_requests_for_operation(
            operation, period=METRIC_PERIOD, statistic="Sum"
        )
        for operation in operations
    }
    return cloudwatch.MathExpression(
        expression=" + ".join(f"FILL({term}, 0)" for term in terms),
        using_metrics=terms,
        period=METRIC_PERIOD,
        label="throttled requests",
    )


def _above_fences(scope: Construct, config: DeploymentConfig) -> DeploymentConfig:
    """The config as the function runs it: each key whose layout changed from the start of its latest
    epoch, above its fence (tickets_deploy.epochs.applied). Without a readable ledger, as written: the
    ledger check stops synthesis then anyway."""
    try:
        path = find_ledger(scope)
    except LedgerError:
        return config
    return epochs.applied_from(config, path)
