"""The resources a TicketService is made of (tickets_cdk/service.py wires them together)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnDynamicReference, CfnDynamicReferenceService, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from tickets import tables
from tickets_deploy.opaque_keys import has_opaque_counters, opaque_keys_parameter
from tickets_deploy.schema import DeploymentConfig

from .powertools import POWERTOOLS_VERSION

RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
METRIC_PERIOD = Duration.minutes(5)
# What a browser's request may carry: the API's own headers, and an AWS_IAM URL's signature.
REQUEST_HEADERS = ("content-type", "accept", "idempotency-key", "authorization")
SIGV4_HEADERS = ("x-amz-date", "x-amz-security-token", "x-amz-content-sha256")
READ_OPAQUE_KEYS_ACTION = "ssm:GetParameter"  # the one call tickets/opaque/secret.py makes
# What a caller of the AWS_IAM Function URL needs (both, since October 2025), each only through the URL.
URL_INVOKE_CONDITIONS = {
    "lambda:InvokeFunctionUrl": {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
    "lambda:InvokeFunction": {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}},
}


def cors_options(origins: Sequence[str]) -> lambda_.FunctionUrlCorsOptions | None:
    if not origins:
        return None
    return lambda_.FunctionUrlCorsOptions(
        allowed_origins=list(origins),
        allowed_methods=[lambda_.HttpMethod.GET, lambda_.HttpMethod.POST],
        allowed_headers=[*REQUEST_HEADERS, *SIGV4_HEADERS],
        max_age=Duration.minutes(10),
    )


def powertools_layer_arn() -> str:
    """The pinned Powertools release's layer, resolved at deploy from Powertools' public SSM parameter."""
    parameter = f"/aws/service/powertools/python/{ARCHITECTURE.name}/{RUNTIME.name}/{POWERTOOLS_VERSION}"
    return CfnDynamicReference(CfnDynamicReferenceService.SSM, parameter).to_string()


def allow_opaque_keys(role: iam.IRole, config: DeploymentConfig) -> str | None:
    """The opaque counters' keys' SSM SecureString, which the function alone may read (None: no opaque counter)."""
    if not has_opaque_counters(config):
        return None
    name = opaque_keys_parameter(config.table_name)
    arn = Stack.of(role).format_arn(service="ssm", resource="parameter", resource_name=name.lstrip("/"))
    role.add_to_principal_policy(iam.PolicyStatement(actions=[READ_OPAQUE_KEYS_ACTION], resources=[arn]))
    return name


def invoke_policy(scope: Construct, function: lambda_.IFunction) -> iam.ManagedPolicy:
    return iam.ManagedPolicy(
        scope,
        "InvokePolicy",
        description="Call the Tickets Function URL (SigV4)",
        statements=[
            iam.PolicyStatement(actions=[action], resources=[function.function_arn], conditions=conditions)
            for action, conditions in URL_INVOKE_CONDITIONS.items()
        ],
    )


def admit_caller(function: lambda_.Function, caller: str) -> None:
    """The function's side of a call from another account (docs/how-to/call-from-another-account.md)."""
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


def allow_logs(key: kms.IKey, stack: Stack) -> None:
    """Let CloudWatch Logs use the key for this account's log groups here (an imported key's owner adds this)."""
    log_groups = f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:*"
    key.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
            resources=["*"],  # in a key policy, "*" is this key
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_groups}},
        )
    )


def service_tables(
    scope: Construct,
    config: DeploymentConfig,
    table_ids: tuple[str, str, str, str],
    removal_policy: RemovalPolicy,
    encryption_key: kms.IKey | None,
) -> tuple[dynamodb.Table, dynamodb.Table, dynamodb.Table | None, dynamodb.Table | None]:
    """The counter, idempotency, series (with series) and workers (with pools) tables, with these logical ids."""

    def table(logical_id: str, partition_key: str, **options: Any) -> dynamodb.Table:
        made = dynamodb.Table(
            scope,
            logical_id,
            partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=removal_policy != RemovalPolicy.DESTROY,
            removal_policy=removal_policy,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED if encryption_key is not None else None,
            encryption_key=encryption_key,
            **options,
        )
        made.node.default_child.override_logical_id(logical_id)  # type: ignore[union-attr]
        return made

    # Fixed names: after `cdk destroy` (tables are retained) a redeploy fails on the existing table instead of
    # starting an empty one, where every counter, series and worker id (its epoch) would begin again.
    counters = table(table_ids[0], tables.COUNTER_KEY, table_name=config.table_name)
    idempotency = table(table_ids[1], tables.IDEMPOTENCY_KEY, time_to_live_attribute=tables.IDEMPOTENCY_TTL)
    sort_key = dynamodb.Attribute(name=tables.SERIES_SORT_KEY, type=dynamodb.AttributeType.NUMBER)

    def series_shaped(table_id: str, suffix: str) -> dynamodb.Table:  # the series table's shape (tickets/tables.py)
        return table(
            table_id, tables.SERIES_PARTITION_KEY, table_name=f"{config.table_name}{suffix}", sort_key=sort_key
        )

    series = series_shaped(table_ids[2], tables.SERIES_TABLE_SUFFIX) if config.series else None
    workers = series_shaped(table_ids[3], tables.WORKERS_TABLE_SUFFIX) if config.workers else None
    return counters, idempotency, series, workers


def throttled_requests(table: dynamodb.Table, actions: Sequence[str]) -> cloudwatch.MathExpression:
    """Throttled requests of these actions' operations, summed, each term filled with 0 first: DynamoDB publishes only
    a throttled operation's, and `a + b` has no value where either has none (as CDK's own sum writes it)."""
    operations = [action.removeprefix("dynamodb:") for action in actions]
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
