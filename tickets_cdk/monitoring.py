"""Alarms an operator needs before users notice: crashes, throttling, and counters nearing max or running out."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
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
from .service import TicketService

PERIOD = METRIC_PERIOD
_ALARM_EMAIL, _ALARM_DAYS_LEFT = (
    next(each for each in FIELDS if each.prop == prop) for prop in ("alarm_email", "alarm_days_left")
)


class TicketAlarms(Construct):
    """The alarms of one TicketService (opt-in): crashes, throttles, 500s, counters near their max and counters
    running out. `alarm_email` (cdk.json's alarmEmail) subscribes an address to an encrypted topic every alarm
    notifies; `alarm_days_left` (alarmDaysLeft, default 30) is CounterRunningOut's threshold; `alarms` holds
    each alarm by its id."""

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
        function = service.function

        self._alarm(
            "FunctionErrors",
            function.metric_errors(period=PERIOD, statistic="Sum"),
            "The Tickets function crashed or timed out (handled refusals are not errors).",
        )
        self._alarm(
            "FunctionThrottles",
            function.metric_throttles(period=PERIOD, statistic="Sum"),
            "Lambda throttled Tickets invocations: raise reserved concurrency or the account limit.",
        )
        # Every operation the handler calls on each table (store.py; idempotency.py).
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
            f"At its recent rate a counter's lane reaches its max within {days_left} days (alarmDaysLeft), for 3 "
            "hours running; the function's logs (CounterDaysLeft, key) and `.venv/bin/python -m tickets_admin list "
            "--rate-over 60` name the key. Raise max or plan a new key.",
            threshold=days_left,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=3,
        )
        if service.opaque_keys_parameter is not None:  # only where a counter is opaque
            self._alarm(
                "OpaqueKeyReplaced",
                service.metric_errors("key_replaced"),
                "The function holds another key for a key version than the one its first ids were made with (the "
                "SSM parameter recreated?): it answers 503 for that counter. Restore the key "
                "(docs/explanation/opaque-ids.md#a-key-is-what-it-was).",
            )
        # Every alarm above by its id, for the dashboard's alarm widget and the metrics they watch.
        self.alarms: dict[str, cloudwatch.Alarm] = {
            child.node.id: child for child in self.node.children if isinstance(child, cloudwatch.Alarm)
        }

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.Metric | cloudwatch.MathExpression,
        description: str,
        **condition: Any,
    ) -> cloudwatch.Alarm:
        """An alarm on `metric`: by default when it is 1 or more in one period; `condition` overrides create_alarm's
        threshold, comparison_operator or evaluation_periods. A period without data never alarms."""
        alarm = metric.create_alarm(
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
        return alarm


def _notification_topic(scope: Construct, email: str) -> sns.Topic:
    # CloudWatch cannot publish to a topic under the AWS-managed SNS key, so the topic gets its own.
    key = kms.Key(scope, "TopicKey", enable_key_rotation=True, description="Tickets alarm notifications")
    key.add_to_resource_policy(_for_own_alarms(scope, ["kms:Decrypt", "kms:GenerateDataKey*"], "*"))
    topic = sns.Topic(scope, "AlarmTopic", master_key=key, enforce_ssl=True)
    # The topic's policy (enforce_ssl writes one) replaces SNS's default policy, so it must let CloudWatch publish.
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
