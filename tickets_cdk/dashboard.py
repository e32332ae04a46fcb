"""One CloudWatch dashboard per stack: what the service hands out and refuses, how fast, where it is
throttled, how busy it is, and the state of every alarm."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from .monitoring import TicketAlarms
from .service import TicketService, error_codes

PERIOD = Duration.minutes(1)  # Lambda's and the handler's metrics have one-minute resolution


class TicketDashboard(Construct):
    """A CloudWatch dashboard of one TicketService (opt-in): what it hands out and refuses, how fast, where
    it is throttled, how busy it is, and the state of `alarms` (a TicketAlarms, or any alarms)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        service: TicketService,
        alarms: TicketAlarms | Sequence[cloudwatch.IAlarm] = (),
    ):
        super().__init__(scope, construct_id)
        function = service.function
        reserved_concurrency = service.config.reserved_concurrency
        table_throttles = service.metric_table_throttles()
        idempotency_table_throttles = service.metric_idempotency_table_throttles()
        if isinstance(alarms, TicketAlarms):
            alarms = list(alarms.alarms.values())
        # No dashboard_name: CloudFormation generates one, so two stacks (or two deployments) never clash.
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))

        issued = service.metric_tickets_issued(period=PERIOD, label="tickets issued")
        refused = [service.metric_errors(code, period=PERIOD, label=code) for code in error_codes()]
        duration = [
            function.metric_duration(statistic=statistic, period=PERIOD, label=f"duration {statistic}")
            for statistic in ("p50", "p99")
        ]
        concurrency = function.metric(
            "ConcurrentExecutions", statistic="Maximum", period=PERIOD, label="concurrent executions"
        )
        cap = (
            [cloudwatch.HorizontalAnnotation(value=reserved_concurrency, label="reserved concurrency")]
            if reserved_concurrency
            else None
        )
        # One line per operation the handler calls on each table: the very metrics the throttle alarms sum.
        table_throttled = _per_operation(table_throttles)
        idempotency_throttled = _per_operation(idempotency_table_throttles)
        function_throttled = function.metric_throttles(statistic="Sum", period=PERIOD, label="throttled invocations")

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
                cloudwatch.GraphWidget(
                    title="Series numbers issued, by key and series",
                    left=[service.metric_series("SeriesIssued", period=PERIOD)],
                    width=12,
                ),
                cloudwatch.GraphWidget(
                    title="Series numbers voided, by key and series",
                    left=[service.metric_series("SeriesVoided", period=PERIOD)],
                    width=12,
                ),
            )
        if alarms:
            self.dashboard.add_widgets(cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(alarms), width=24))


def _per_operation(throttles: cloudwatch.IMetric) -> list[cloudwatch.IMetric]:
    """The alarm's terms as lines of their own: the graph shows which call is throttled, with no metric math."""
    terms = throttles.using_metrics.values() if isinstance(throttles, cloudwatch.MathExpression) else [throttles]
    return [
        term.with_(label=(term.dimensions or {})["Operation"], period=PERIOD)
        for term in terms
        if isinstance(term, cloudwatch.Metric)
    ]
