"""What an operator watches, opt-in: a TicketService's alarms and dashboard (docs/reference/monitoring.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from tickets_deploy.rules import ConfigError
from tickets_deploy.schema import FIELDS

from .resources import METRIC_PERIOD
from .service import TicketService, error_codes

Alarmable = cloudwatch.Metric | cloudwatch.MathExpression
DASHBOARD_PERIOD = Duration.minutes(1)  # Lambda's and the handler's metrics have one-minute resolution
_ALARM_EMAIL, _ALARM_DAYS_LEFT = (
    next(each for each in FIELDS if each.prop == prop) for prop in ("alarm_email", "alarm_days_left")
)


class TicketAlarms(Construct):
    """The alarms of one TicketService; `alarm_email` subscribes an address to an encrypted topic every alarm
    notifies, `alarm_days_left` is CounterRunningOut's threshold; `alarms` holds each alarm by its id."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        service: TicketService,
        alarm_email: str | None = None,
        alarm_days_left: int | None = None,
    ):
        super().__init__(scope, construct_id)
        try:
            alarm_email = _ALARM_EMAIL.parse(alarm_email, {}, "alarm_email")
            days_left: int = _ALARM_DAYS_LEFT.parse(
                _ALARM_DAYS_LEFT.default if alarm_days_left is None else alarm_days_left, {}, "alarm_days_left"
            )
        except ConfigError as err:
            raise ValueError(f"TicketAlarms {self.node.path}: {err}") from None
        self.topic = _notification_topic(self, alarm_email) if alarm_email else None
        self.alarms: dict[str, cloudwatch.Alarm] = {}

        self._alarm(
            "FunctionErrors",
            service.function.metric_errors(period=METRIC_PERIOD, statistic="Sum"),
            "The Tickets function crashed or timed out (handled refusals are not errors).",
        )
        self._alarm(
            "FunctionThrottles",
            service.function.metric_throttles(period=METRIC_PERIOD, statistic="Sum"),
            "Lambda throttled Tickets invocations: raise reserved concurrency or the account limit.",
        )
        self._alarm(
            "TableThrottles",
            service.metric_table_throttles(),
            "DynamoDB throttled the counter table: a hot key needs shards or blocks "
            "(docs/how-to/change-a-layout.md#a-hot-key).",
        )
        self._alarm(
            "IdempotencyTableThrottles",
            service.metric_idempotency_table_throttles(),
            "DynamoDB throttled the idempotency table: requests with an Idempotency-Key get 503s.",
        )
        self._alarm(
            "InternalErrors",
            service.metric_errors("internal_error"),
            "The handler answered 500: a bug or a misconfigured table. See the function's logs.",
        )
        self._alarm(
            "CounterNearMax",
            service.metric_counter_near_max(),
            "A counter passed 90% of its max; the logs name the key. Raise max or plan a new key.",
        )
        self._alarm(
            "CounterRunningOut",
            service.metric_counter_days_left(),
            f"A counter's lane reaches its max within {days_left} days (alarmDaysLeft) at its recent rate, for 3 "
            "hours; its key is in the logs (CounterDaysLeft) and `.venv/bin/python -m tickets_admin list --rate-over "
            "60`. Raise max or plan a new key.",
            threshold=days_left,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=3,
        )
        if service.opaque_keys_parameter is not None:  # only where a counter is opaque
            self._alarm(
                "OpaqueKeyReplaced",
                service.metric_errors("key_replaced"),
                "The function holds another key for a key version than its first ids' (the parameter recreated?) and "
                "answers 503: restore the key (docs/explanation/opaque-ids.md#a-key-is-what-it-was).",
            )

    def _alarm(self, construct_id: str, metric: Alarmable, description: str, **condition: Any) -> None:
        """An alarm when `metric` is 1 or more in a period, unless `condition` says otherwise; no data never alarms."""
        self.alarms[construct_id] = alarm = metric.create_alarm(
            self,
            construct_id,
            alarm_description=description,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            **{
                "threshold": 1,
                "evaluation_periods": 1,
                "comparison_operator": cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                **condition,
            },
        )
        if self.topic is not None:
            alarm.add_alarm_action(actions.SnsAction(self.topic))


def _notification_topic(scope: Construct, email: str) -> sns.Topic:
    # CloudWatch cannot publish to a topic under the AWS-managed SNS key, so the topic gets its own.
    key = kms.Key(scope, "TopicKey", enable_key_rotation=True, description="Tickets alarm notifications")
    key.add_to_resource_policy(_for_own_alarms(scope, ["kms:Decrypt", "kms:GenerateDataKey*"], "*"))
    topic = sns.Topic(scope, "AlarmTopic", master_key=key, enforce_ssl=True)
    # enforce_ssl's policy replaces SNS's default one, which let CloudWatch publish.
    topic.add_to_resource_policy(_for_own_alarms(scope, ["sns:Publish"], topic.topic_arn))
    topic.add_subscription(subscriptions.EmailSubscription(email))
    return topic


def _for_own_alarms(scope: Construct, allowed: list[str], resource: str) -> iam.PolicyStatement:
    """Allow CloudWatch these actions for this account's alarms in this region only (no confused deputy)."""
    stack = Stack.of(scope)
    return iam.PolicyStatement(
        principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
        actions=allowed,
        resources=[resource],
        conditions={
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": f"arn:{stack.partition}:cloudwatch:{stack.region}:{stack.account}:alarm:*"},
        },
    )


class TicketDashboard(Construct):
    """A CloudWatch dashboard of one TicketService and the state of `alarms` (a TicketAlarms, or any alarms)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        service: TicketService,
        alarms: TicketAlarms | Sequence[cloudwatch.IAlarm] = (),
    ):
        super().__init__(scope, construct_id)
        function, period, reserved = service.function, DASHBOARD_PERIOD, service.config.reserved_concurrency
        if isinstance(alarms, TicketAlarms):
            alarms = list(alarms.alarms.values())
        # No dashboard_name: CloudFormation generates one, so two stacks (or two deployments) never clash.
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))

        issued = service.metric_tickets_issued(period=period, label="tickets issued")
        refused = [service.metric_errors(code, period=period, label=code) for code in error_codes()]
        duration = [function.metric_duration(statistic=p, period=period, label=f"duration {p}") for p in ("p50", "p99")]
        concurrency = function.metric(
            "ConcurrentExecutions", statistic="Maximum", period=period, label="concurrent executions"
        )
        cap = [cloudwatch.HorizontalAnnotation(value=reserved, label="reserved concurrency")] if reserved else None
        table_throttled = _per_operation(service.metric_table_throttles())
        idempotency_throttled = _per_operation(service.metric_idempotency_table_throttles())
        function_throttled = function.metric_throttles(statistic="Sum", period=period, label="throttled invocations")

        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Tickets issued", left=[issued], width=12),
            cloudwatch.GraphWidget(title="Errors by code", left=refused, width=12, stacked=True),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Function duration (ms)", left=duration, width=12),
            cloudwatch.GraphWidget(title="Concurrent executions", left=[concurrency], left_annotations=cap, width=12),
        )
        days_left = service.metric_counter_days_left(label="days left, the soonest lane at its recent rate")
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Days before a counter reaches max", left=[days_left], width=24),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Counter table throttled requests", left=table_throttled, width=8),
            cloudwatch.GraphWidget(title="Idempotency table throttled requests", left=idempotency_throttled, width=8),
            cloudwatch.GraphWidget(title="Function throttles", left=[function_throttled], width=8),
        )
        if service.series_table is not None:
            self.dashboard.add_widgets(
                *(
                    cloudwatch.GraphWidget(
                        title=f"Series numbers {what}, by key and series",
                        left=[service.metric_series(f"Series{what.capitalize()}", period=period)],
                        width=12,
                    )
                    for what in ("issued", "voided")
                )
            )
        if alarms:
            self.dashboard.add_widgets(cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(alarms), width=24))


def _per_operation(throttles: cloudwatch.MathExpression) -> list[cloudwatch.IMetric]:
    """The alarm's terms as lines of their own: the graph shows which call is throttled, with no metric math."""
    return [
        term.with_(label=(term.dimensions or {})["Operation"], period=DASHBOARD_PERIOD)
        for term in throttles.using_metrics.values()
        if isinstance(term, cloudwatch.Metric)
    ]
