"""The service itself: the counter table, the idempotency table, the function and its URL."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import CfnDynamicReference, CfnDynamicReferenceService, Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from cdk_nag import NagSuppressions
from constructs import Construct

from tickets import tables, timing
from tickets_deploy.config import DeploymentConfig, handler_environment

from .powertools import layer_parameter, powertools_version

LAMBDA_SRC = Path(__file__).resolve().parent.parent / "lambda_src"
HANDLER = "tickets.handler.lambda_handler"
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
# Stateful resources keep these logical ids forever: a new id would replace (and orphan) the table.
COUNTER_TABLE_ID = "TicketsTable"
IDEMPOTENCY_TABLE_ID = "TicketsIdempotencyTable"


class TicketService(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig, region: str):
        super().__init__(scope, construct_id)

        # A fixed name: after `cdk destroy` (the table is retained) a redeploy fails on the existing table
        # instead of starting a new, empty one where every counter would begin again at its start.
        self.table = _table(self, COUNTER_TABLE_ID, tables.COUNTER_KEY, table_name=config.table_name)
        self.idempotency_table = _table(
            self, IDEMPOTENCY_TABLE_ID, tables.IDEMPOTENCY_KEY, time_to_live_attribute=tables.IDEMPOTENCY_TTL
        )

        # The audit trail of which request got which tickets: kept with the tables when the stack goes.
        self.log_group = logs.LogGroup(self, "FunctionLogs", removal_policy=RemovalPolicy.RETAIN)
        # In days, as parse_config checked it against CloudWatch's periods (tickets_deploy.config.LOG_RETENTION_DAYS):
        # set on the resource itself so that list is the only one.
        self.log_group.node.default_child.retention_in_days = config.log_retention_days
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

        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(LAMBDA_SRC), exclude=["**/__pycache__", "**/*.pyc"]),
            layers=[lambda_.LayerVersion.from_layer_version_arn(self, "Powertools", _powertools_layer_arn())],
            memory_size=256,
            timeout=Duration.seconds(timing.FUNCTION_TIMEOUT_SECONDS),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            role=role,
            reserved_concurrent_executions=config.reserved_concurrency,
            environment={
                **handler_environment(
                    config,
                    region,
                    counter_table=self.table.table_name,
                    idempotency_table=self.idempotency_table.table_name,
                ),
            },
        )
        # Only the calls the handler makes (store.py, Powertools idempotency), only on these tables.
        self.table.grant(role, "dynamodb:UpdateItem", "dynamodb:BatchGetItem")
        self.idempotency_table.grant(
            role, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"
        )

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

        NagSuppressions.add_resource_suppressions(
            role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level "
                    "permissions; Lambda's active tracing adds exactly these two actions on '*'.",
                    "appliesTo": ["Resource::*"],
                }
            ],
            apply_to_children=True,
        )


def _powertools_layer_arn() -> str:
    """The layer of the Powertools release requirements-serve.txt pins, for this runtime and architecture: a
    dynamic reference CloudFormation resolves from Powertools' public SSM parameter in the stack's region."""
    parameter = layer_parameter(RUNTIME.name, ARCHITECTURE.name, powertools_version())
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


def _table(scope: Construct, logical_id: str, partition_key: str, **options) -> dynamodb.Table:
    table = dynamodb.Table(
        scope,
        logical_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        deletion_protection=True,
        removal_policy=RemovalPolicy.RETAIN,
        **options,
    )
    table.node.default_child.override_logical_id(logical_id)
    return table
