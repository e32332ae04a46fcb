"""TicketService: one Tickets deployment in its stack's region, its tables, function and URL, grants and metrics."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Sequence
from typing import Any, Unpack

from aws_cdk import Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from tickets import errors
from tickets_deploy.config import parse_props
from tickets_deploy.environment import METRICS_NAMESPACE, handler_environment
from tickets_deploy.ledger import LedgerError, applied_from
from tickets_deploy.regions import refusal
from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import FIELDS, DeploymentConfig

from . import ledger_check, resources, suppressions
from .access_rules import AccessRulesStore, grantee_principal
from .asset import HANDLER, asset_directory
from .props import TicketServiceProps

# Every call the handler makes on each table (tickets/store.py, tickets/idempotency.py, tickets/series/store.py,
# tickets/workers/store.py), the role's only ones. Of series and workers, only a refused request's item is deleted.
COUNTER_ACTIONS = ("dynamodb:UpdateItem", "dynamodb:BatchGetItem")
IDEMPOTENCY_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
SERIES_ACTIONS = (*IDEMPOTENCY_ACTIONS, "dynamodb:Query")
WORKERS_ACTIONS = ("dynamodb:UpdateItem", "dynamodb:Query")
FIELD_PROPS = tuple(each.prop for each in FIELDS if each.owner == "TicketService")


class TicketService(Construct):
    """Tickets in the region of the enclosing stack: its props (FIELD_PROPS are cdk.json's fields in snake_case),
    grants and metrics are in docs/reference/construct.md; synthesis checks it against the app's ledger."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        encryption_key: kms.IKey | None = None,
        service_name: str | None = None,
        table_logical_ids: tuple[str, str] | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        **props: Unpack[TicketServiceProps],
    ):
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        label = f"TicketService {self.node.path}"
        if Token.is_unresolved(stack.region):
            raise ValueError(
                f"{label}: the stack {stack.stack_name} is environment-agnostic; Function URLs exist only in some "
                "regions, and its slot decides its tickets. Give the stack a region: "
                "Stack(..., env=Environment(region='us-east-1'))."
            )
        if (why_not := refusal(stack.region)) is not None:
            raise ValueError(f"{label}: the stack's region: {why_not}")
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
        ledger_check.register(self, config, self.service_name, table_ids)

        self.encryption_key = encryption_key
        all_ids = (*table_ids, f"{prefix}SeriesTable", f"{prefix}WorkersTable")
        self.table, self.idempotency_table, self.series_table, self.workers_table = resources.service_tables(
            self, config, all_ids, removal_policy, encryption_key
        )

        # The audit trail of which request got which tickets: kept with the tables.
        self.log_group = logs.LogGroup(
            self, "FunctionLogs", removal_policy=removal_policy, encryption_key=encryption_key
        )
        if encryption_key is not None:
            resources.allow_logs(encryption_key, stack)
        # On the resource: the days the config checked (tickets_deploy.rules.LOG_RETENTION_DAYS), the one list.
        self.log_group.node.default_child.retention_in_days = config.log_retention_days  # type: ignore[union-attr]
        self.role = role = iam.Role(
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

        self.function = lambda_.Function(
            self,
            "Function",
            runtime=resources.RUNTIME,
            architecture=resources.ARCHITECTURE,
            handler=HANDLER,
            code=lambda_.Code.from_asset(asset_directory()),
            layers=[lambda_.LayerVersion.from_layer_version_arn(self, "Powertools", resources.powertools_layer_arn())],
            memory_size=config.memory_size,
            timeout=Duration.seconds(config.timeout_seconds),
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
                workers_table=self.workers_table.table_name if self.workers_table is not None else None,
            ),
        )
        self._grant_tables(role)
        if encryption_key is not None:  # DynamoDB encrypts and decrypts the tables' items as the function
            encryption_key.grant_encrypt_decrypt(role)
        self.opaque_keys_parameter: str | None = resources.allow_opaque_keys(role, config)
        suppressions.explain(self.function, reserved_concurrency=config.reserved_concurrency)
        suppressions.explain_role(role, encrypted=encryption_key is not None)
        self.access_rules = (
            AccessRulesStore(self, "Access", self.function, config.access) if config.access is not None else None
        )

        self.url = self.function.add_function_url(
            auth_type=lambda_.FunctionUrlAuthType[config.auth], cors=resources.cors_options(config.cors_origins)
        )
        self.invoke_policy = resources.invoke_policy(self, self.function) if config.auth == "AWS_IAM" else None
        for caller in config.callers:
            resources.admit_caller(self.function, caller)

    def _grant_tables(self, role: iam.IRole) -> None:
        for table, actions in zip(
            (self.table, self.idempotency_table, self.series_table, self.workers_table),
            (COUNTER_ACTIONS, IDEMPOTENCY_ACTIONS, SERIES_ACTIONS, WORKERS_ACTIONS),
        ):
            if table is not None:
                table.grant(role, *actions)

    def grant_issue(self, grantee: iam.IGrantable, keys: Sequence[str] | None = None) -> iam.Grant:
        """Let `grantee` take tickets of `keys` (`/{key}`, `/?key=`, `/_blocks/{key}`, the compat route)."""
        return self._grant(grantee, "issue", keys)

    def grant_series(self, grantee: iam.IGrantable, keys: Sequence[str] | None = None) -> iam.Grant:
        """Let `grantee` take numbers of the series `keys` (`POST /_series/{key}`)."""
        return self._grant(grantee, "series", keys)

    def grant_void(self, grantee: iam.IGrantable, keys: Sequence[str] | None = None) -> iam.Grant:
        """Let `grantee` void numbers of the series `keys` (`POST /_series/{key}/void`)."""
        return self._grant(grantee, "void", keys)

    def grant_read(self, grantee: iam.IGrantable, keys: Sequence[str] | None = None) -> iam.Grant:
        """Let `grantee` read the state of `keys` (`GET /_counters/{key}`) and their journals."""
        return self._grant(grantee, "read", keys)

    def grant_workers(self, grantee: iam.IGrantable, pools: Sequence[str] | None = None) -> iam.Grant:
        """Let `grantee` lease, renew, release and list worker ids of the pools `pools` (`/_workers/{pool}`)."""
        return self._grant(grantee, "workers", pools)

    def _grant(self, grantee: iam.IGrantable, operation: str, keys: Sequence[str] | None) -> iam.Grant:
        """Let `grantee` call the URL; with access rules, also do `operation` on `keys` (None: every key, `*`)."""
        label = f"TicketService {self.node.path}: grant_{operation}"
        if self.config.auth != "AWS_IAM":
            raise ValueError(f"{label} needs auth AWS_IAM; with auth {self.config.auth} the URL is public")
        if isinstance(keys, str):
            raise ValueError(f"{label}: keys must be a list of key patterns, got the string {keys!r}")
        if self.access_rules is not None:
            principal, longest = grantee_principal(grantee, label)
            self.access_rules.add(principal, operation, ["*"] if keys is None else keys, longest)
        elif keys is not None:
            raise ValueError(
                f"{label}: keys={list(keys)!r} would limit nothing: this service has no access rules, so every "
                "invoker may do everything. Give the service `access` (`{}` for grants only) to enforce them"
            )
        url, invoke = (
            iam.Grant.add_to_principal(
                grantee=grantee, actions=[action], resource_arns=[self.function.function_arn], conditions=conditions
            )
            for action, conditions in resources.URL_INVOKE_CONDITIONS.items()
        )
        return url.combine(invoke)

    def metric(self, metric_name: str, *, code: str | None = None, **options: Any) -> cloudwatch.Metric:
        """One of the handler's own metrics (namespace Tickets, this service's `service` dimension)."""
        dimensions = {"service": self.service_name, **({"code": code} if code else {})}
        return cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=metric_name,
            dimensions_map=dimensions,
            **{"period": resources.METRIC_PERIOD, "statistic": "Sum", **options},
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

    def metric_counter_days_left(self, **options: Any) -> cloudwatch.Metric:
        """The fewest days any lane has left at its recent rate (`CounterDaysLeft`'s hourly Minimum), for every key."""
        return self.metric("CounterDaysLeft", **{"statistic": "Minimum", "period": Duration.hours(1), **options})

    def metric_series(self, metric_name: str = "SeriesIssued", **options: Any) -> cloudwatch.MathExpression:
        """`SeriesIssued` or `SeriesVoided`, one line per key and series (a SEARCH: series names follow the periods)."""
        period = options.pop("period", resources.METRIC_PERIOD)
        search = (
            f'SEARCH(\'{{{METRICS_NAMESPACE},key,series,service}} MetricName="{metric_name}" '
            f"service=\"{self.service_name}\"', 'Sum', {int(period.to_seconds())})"
        )
        return cloudwatch.MathExpression(expression=search, using_metrics={}, label="", **options)

    def metric_table_throttles(self) -> cloudwatch.MathExpression:
        """Throttled requests on the counter table, over every operation the handler calls on it."""
        return resources.throttled_requests(self.table, COUNTER_ACTIONS)

    def metric_idempotency_table_throttles(self) -> cloudwatch.MathExpression:
        """Throttled requests on the idempotency table, over every operation the handler calls on it."""
        return resources.throttled_requests(self.idempotency_table, IDEMPOTENCY_ACTIONS)


def _signature_with_props() -> inspect.Signature:
    """TicketService's signature for help() and inspect: each prop a keyword defaulting to None, as mypy sees it."""
    signature = inspect.signature(TicketService.__init__)
    own = [each for each in signature.parameters.values() if each.kind is not inspect.Parameter.VAR_KEYWORD]
    hints = typing.get_type_hints(TicketServiceProps)
    props = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=hints[name]) for name in hints
    ]
    return signature.replace(parameters=[*own, *props])


TicketService.__init__.__dict__["__signature__"] = _signature_with_props()  # help() and inspect read it


def error_codes() -> list[str]:
    """Every `code` the handler can put on its Errors metric: one per error class in tickets.errors."""
    classes = [member for member in vars(errors).values() if isinstance(member, type)]
    return sorted({member.code for member in classes if issubclass(member, errors.TicketsError)})


def _id_part(construct_id: str, label: str) -> str:
    part = re.sub(r"[^A-Za-z0-9]", "", construct_id)
    if not part:
        raise ValueError(f"{label}: the construct id needs a letter or digit (the tables' logical ids start with it)")
    return part


def _above_fences(scope: Construct, config: DeploymentConfig) -> DeploymentConfig:
    """The config as the function runs it (tickets_deploy.ledger.applied); without a ledger, as written (refused)."""
    try:
        path = ledger_check.find_ledger(scope)
    except LedgerError:
        return config
    return applied_from(config, path)
