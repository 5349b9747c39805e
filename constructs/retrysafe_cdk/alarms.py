"""Alarm options shared by the constructs: actions (e.g. an SNS topic), and alarms turned off one by one."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch

from constructs import Construct


@dataclass(frozen=True)
class AlarmOptions:
    """How a construct makes its alarms.

    - ``actions``: run when an alarm fires, e.g. ``[aws_cloudwatch_actions.SnsAction(topic)]``.
    - ``ok_actions``: run when it recovers.
    - ``disabled``: ids of the construct's alarms not to create (e.g. ``{"IteratorAgeAlarm"}``).
    - ``enabled``: False creates none of them.
    """

    actions: Sequence[cloudwatch.IAlarmAction] = ()
    ok_actions: Sequence[cloudwatch.IAlarmAction] = ()
    disabled: Collection[str] = ()
    enabled: bool = True

    @classmethod
    def of(cls, value: bool | AlarmOptions) -> AlarmOptions:
        """A construct's ``alarms=`` prop: ``True`` (all, no actions), ``False`` (none) or options."""
        return value if isinstance(value, AlarmOptions) else cls(enabled=value)

    def wants(self, alarm_id: str) -> bool:
        """Whether the alarm ``alarm_id`` is to be created."""
        return self.enabled and alarm_id not in self.disabled


def add_alarm(scope: Construct, alarm_id: str, metric: cloudwatch.IMetric, *, threshold: float, description: str,
              options: AlarmOptions, evaluation_periods: int = 1) -> cloudwatch.Alarm:
    """An alarm at ``metric >= threshold`` (missing data is not breaching), with the options' actions."""
    alarm = cloudwatch.Alarm(
        scope, alarm_id, metric=metric, threshold=threshold, evaluation_periods=evaluation_periods,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING, alarm_description=description)
    if options.actions:
        alarm.add_alarm_action(*options.actions)
    if options.ok_actions:
        alarm.add_ok_action(*options.ok_actions)
    return alarm
