"""``IdempotentEventRule``: an EventBridge rule whose target is an idempotent function, with retries and a DLQ."""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import Arn, ArnFormat, Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from aws_cdk.interfaces.aws_events import IEventBusRef

from constructs import Construct, IValidation

from ._props import refuse_ignored, struct_values
from ._sources import (
    add_redelivery,
    configure_async,
    dead_letter_queue,
    delivery_failures_alarm,
    depth_alarm,
    metric_depth,
    metric_destination_delivery_failures,
)
from .alarms import AlarmOptions, add_alarm
from .function import IdempotentFunction
from .horizon import DAY, LAMBDA_ASYNC_MAX_EVENT_AGE, async_redelivery
from .table import IdempotencyTable

#: EventBridge's retry policy limits for a target (and its defaults: 24 hours, 185 attempts).
_MAX_EVENT_AGE = Duration.hours(24)
_MIN_EVENT_AGE = 60
_MAX_RETRY_ATTEMPTS = 185


def _check_own_bus(scope: Construct, bus: IEventBusRef) -> None:
    """Refuse a bus of another account or region: a rule lives in its bus's account and region.

    The rule is created in ``scope``'s stack with the bus's name (``EventBusName``), so it would attach
    to a same-named bus of this account and region, while the grants and the alarms named the other.
    An environment that is a token (an environment-agnostic stack) is not compared.
    """
    own = Stack.of(scope)
    for what, theirs, ours in (("account", bus.env.account, own.account), ("region", bus.env.region, own.region)):
        if Token.is_unresolved(theirs) or Token.is_unresolved(ours) or theirs == ours:
            continue
        raise ValueError(
            f"{scope.node.path}: the event bus {bus.node.path} is in the {what} {theirs}, this stack in {ours}. "
            "A rule is created in its bus's account and region, and CloudFormation names the bus by its name "
            "here, so the rule would attach to a same-named bus of this stack's account and region (or fail), "
            "while grant_put_events and the alarms named the other one. Fix: in the bus owner's account and "
            "region, add a rule on that bus targeting an event bus of this account and region "
            "(events_targets.EventBus(...)), and put this IdempotentEventRule on this account's bus "
            "(rule_props=events.RuleProps(event_bus=events.EventBus.from_event_bus_name(...)) or a new bus).")


class IdempotentEventRule(Construct):
    """An EventBridge rule (new or existing) delivering to an :class:`IdempotentFunction`, nothing lost on failure.

    EventBridge invokes Lambda asynchronously: it retries the delivery for up to ``max_event_age``,
    then Lambda's asynchronous queue retries the function for up to ``async_max_event_age``.
    Whatever fails both ends in one dead-letter queue: events EventBridge could not deliver (the
    message body is the event), and invocations that failed every attempt (a Lambda invocation
    record: the event is its ``requestPayload``). Their sum, plus the DLQ's retention (an operator
    redrives it), is this rule's part of the table's :class:`RetryHorizon`.

    :param function: the target; its handler uses ``retrysafe.idempotent``. Required.
    :param existing_rule: a rule of your own to add the target to. @default a new rule ``Rule``
        from ``rule_props``.
    :param rule_props: ``events.RuleProps`` of the new rule (``event_pattern`` or ``schedule``,
        ``event_bus``...). @default none: refused, a rule needs a pattern or a schedule. Refused
        with ``existing_rule``.
    :param existing_dead_letter_queue: a queue of your own (same account and region). @default a
        new queue ``DeadLetterQueue`` from ``dead_letter_queue_props``.
    :param dead_letter_queue_props: ``sqs.QueueProps`` of the new queue. @default SQS-managed
        encryption, TLS only, 14 days' retention. Refused with ``existing_dead_letter_queue``.
    :param dead_letter_queue_logical_id: pin the new queue's logical id (moving or renaming this
        construct then keeps the queue and its messages). @default derived from the construct path.
        Refused with ``existing_dead_letter_queue``.
    :param subscriber: the subscriber the function's records are scoped by, passed as
        ``RETRYSAFE_SUBSCRIBER``. @default the function's subscriber when another rule or subscription
        already gave it one, else this construct's path below its stack (pin it before moving or
        renaming the construct). A ``subscriber=`` in the handler's decorator wins. Two consumers with
        one subscriber on one table are refused.
    :param event: what the function receives (``events.RuleTargetInput``). @default the event. A
        transformed input has no envelope ``id``, the runtime's default key: give the handler a ``key=``.
    :param max_event_age: how long EventBridge retries a delivery, 60 s..24 h. @default 24 hours.
    :param retry_attempts: EventBridge's delivery retries, 0..185. @default 185.
    :param async_max_event_age: how long Lambda keeps retrying the invocation, 60 s..6 h.
        @default 6 hours.
    :param async_retry_attempts: Lambda's retries of a failed invocation, 0..2. @default 2.
    :param alarms: ``True``, ``False`` or :class:`AlarmOptions`. @default True: ``DlqDepthAlarm``
        (DLQ depth >= 1), ``DlqSendFailedAlarm`` (``InvocationsFailedToBeSentToDlq`` >= 1: events lost) and
        ``DestinationDeliveryFailuresAlarm`` (the function's ``DestinationDeliveryFailures`` >= 1: Lambda
        could not put a failed invocation's record in the DLQ, so that event is lost).

    An EventBridge archive of the rule's bus (``events.Archive``, ``bus.archive(...)``, ``CfnArchive``)
    that keeps events longer than the table's records live (its retention, 0 = forever) is refused at
    synthesis: replaying it after the records expired would run the effect again.

    Attributes: ``rule``, ``dead_letter_queue``, ``target``, ``redelivery_seconds``, ``subscriber``,
    ``dlq_alarm``, ``lost_alarm``, ``delivery_failures_alarm``. ``grant_put_events`` lets a producer put events on the rule's bus.
    The function's asynchronous invocation settings are its (or its SnapStart alias's)
    ``EventInvokeConfig``, and a function has one: further rules or subscriptions of the same
    function must pass the same ``async_*`` settings and the first one's ``dead_letter_queue`` as
    ``existing_dead_letter_queue`` (anything else is refused).
    """

    def __init__(self, scope: Construct, construct_id: str, *, function: IdempotentFunction,
                 existing_rule: events.Rule | None = None, rule_props: events.RuleProps | None = None,
                 existing_dead_letter_queue: sqs.IQueue | None = None,
                 dead_letter_queue_props: sqs.QueueProps | None = None, event: events.RuleTargetInput | None = None,
                 max_event_age: Duration = _MAX_EVENT_AGE, retry_attempts: int = _MAX_RETRY_ATTEMPTS,
                 async_max_event_age: Duration = LAMBDA_ASYNC_MAX_EVENT_AGE, async_retry_attempts: int = 2,
                 dead_letter_queue_logical_id: str | None = None, subscriber: str | None = None,
                 alarms: bool | AlarmOptions = True) -> None:
        super().__init__(scope, construct_id)
        refuse_ignored(self, "existing_rule", existing_rule, {"rule_props": rule_props},
                       "set the pattern, schedule and bus on that rule")
        refuse_ignored(self, "existing_dead_letter_queue", existing_dead_letter_queue,
                       {"dead_letter_queue_props": dead_letter_queue_props,
                        "dead_letter_queue_logical_id": dead_letter_queue_logical_id}, "set them on that queue")
        age = int(max_event_age.to_seconds())
        if not _MIN_EVENT_AGE <= age <= int(_MAX_EVENT_AGE.to_seconds()):
            raise ValueError(f"{self.node.path}: max_event_age must be 60 s..24 h (EventBridge's retry policy), "
                             f"got {age}s.")
        if not 0 <= retry_attempts <= _MAX_RETRY_ATTEMPTS:
            raise ValueError(f"{self.node.path}: retry_attempts must be 0..{_MAX_RETRY_ATTEMPTS} (EventBridge's retry "
                             f"policy), got {retry_attempts}.")
        if existing_rule is None and not struct_values(rule_props).keys() & {"event_pattern", "schedule"}:
            raise ValueError(f"{self.node.path}: a new rule needs an event pattern or a schedule: pass "
                             "rule_props=events.RuleProps(event_pattern=events.EventPattern(source=[...]), "
                             "event_bus=...) or existing_rule=your_rule.")
        self.dead_letter_queue, dlq_retention = dead_letter_queue(
            self, "DeadLetterQueue", existing_dead_letter_queue, dead_letter_queue_props, dead_letter_queue_logical_id,
            "events the rule could not deliver and invocations that failed every attempt")
        self.redelivery_seconds = async_redelivery(max_event_age, async_max_event_age, dlq_retention)
        add_redelivery(
            self, function, self.redelivery_seconds,
            f"EventBridge's max_event_age ({age}s) + Lambda's async_max_event_age "
            f"({int(async_max_event_age.to_seconds())}s) + the dead-letter queue's retention "
            f"({int(dlq_retention.to_seconds())}s)",
            "shorten max_event_age, async_max_event_age or the dead-letter queue's retention_period")
        configure_async(self, function, self.dead_letter_queue, async_max_event_age, async_retry_attempts)
        self.subscriber = function.bind_subscriber(self, subscriber)
        self.rule: events.Rule = existing_rule or events.Rule(self, "Rule", **struct_values(rule_props))
        bus = rule_props.event_bus if rule_props is not None else None
        if bus is not None:
            _check_own_bus(self, bus)
        self._bus_arn = bus.event_bus_ref.event_bus_arn if bus is not None else None
        self.target = targets.LambdaFunction(function.invoke_target, event=event,
                                             dead_letter_queue=self.dead_letter_queue,
                                             max_event_age=max_event_age, retry_attempts=retry_attempts)
        self.rule.add_target(self.target)
        options = AlarmOptions.of(alarms)
        self.dlq_alarm = depth_alarm(self, "DlqDepthAlarm", self.dead_letter_queue, options,
                                     "events in the dead-letter queue (undelivered, or failed every attempt)")
        self.lost_alarm = add_alarm(
            self, "DlqSendFailedAlarm", self.metric_dlq_send_failures(), threshold=1, options=options,
            description=f"{self.node.path}: events lost, the dead-letter queue refused them",
        ) if options.wants("DlqSendFailedAlarm") else None
        self._function = function
        self.delivery_failures_alarm = delivery_failures_alarm(
            self, function, options, "failed invocations lost, Lambda could not put them in the dead-letter queue")
        self.node.add_validation(_ArchiveCheck(self, function.table))

    def metric_dlq_depth(self, **options: Any) -> cloudwatch.Metric:
        """Messages waiting in the DLQ (maximum per 5 minutes; ``options``: ``MetricOptions`` fields)."""
        return metric_depth(self.dead_letter_queue, **options)

    def grant_put_events(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` put events on the rule's bus (``events:PutEvents`` on that bus only)."""
        arn = self._bus_arn
        if arn is None:  # the default bus, or the bus an existing rule names (in its stack's account)
            cfn: events.CfnRule = self.rule.node.default_child  # type: ignore[assignment]
            arn = Stack.of(self.rule).format_arn(service="events", resource="event-bus",
                                                 resource_name=cfn.event_bus_name or "default")
        return iam.Grant.add_to_principal(grantee=grantee, actions=["events:PutEvents"], resource_arns=[arn])

    def metric(self, metric_name: str, **options: Any) -> cloudwatch.Metric:
        """An EventBridge metric of this rule (``AWS/Events``; sum per 5 minutes; ``options``: ``MetricOptions``).

        A rule on a custom bus reports under ``RuleName`` and ``EventBusName``, one on the default
        bus under ``RuleName`` alone.
        """
        cfn: events.CfnRule = self.rule.node.default_child  # type: ignore[assignment]
        dimensions = {"RuleName": self.rule.rule_name}
        if cfn.event_bus_name is not None:
            dimensions["EventBusName"] = cfn.event_bus_name
        return cloudwatch.Metric(namespace="AWS/Events", metric_name=metric_name, dimensions_map=dimensions,
                                 **{"statistic": "Sum", "period": Duration.minutes(5), **options})

    def metric_failed_invocations(self, **options: Any) -> cloudwatch.Metric:
        """``FailedInvocations``: deliveries that failed permanently and did not reach the DLQ either."""
        return self.metric("FailedInvocations", **options)

    def metric_dlq_send_failures(self, **options: Any) -> cloudwatch.Metric:
        """``InvocationsFailedToBeSentToDlq``: events lost because the DLQ refused them (permissions, size)."""
        return self.metric("InvocationsFailedToBeSentToDlq", **options)

    def metric_destination_delivery_failures(self, **options: Any) -> cloudwatch.Metric:
        """The function's ``DestinationDeliveryFailures``: failed invocations Lambda could not put in the DLQ."""
        return metric_destination_delivery_failures(self._function, **options)

    def _archive_bus_arns(self) -> list[str]:
        """The ARN of the rule's bus, as the app may spell it (its token, or the bus's name in an ARN)."""
        if self._bus_arn is not None:
            return [self._bus_arn]
        cfn: events.CfnRule = self.rule.node.default_child  # type: ignore[assignment]
        name = cfn.event_bus_name
        # An existing rule on a bus of this app names it by its Ref: that bus's ARN is its GetAtt.
        buses = [bus.event_bus_arn for bus in self.node.root.node.find_all()
                 if isinstance(bus, events.EventBus) and name is not None and bus.event_bus_name == name]
        return buses or [Stack.of(self.rule).format_arn(service="events", resource="event-bus",
                                                        resource_name=name or "default")]


def _archived_bus(archive: events.CfnArchive, rule: IdempotentEventRule) -> bool:
    """Whether ``archive`` keeps the events of ``rule``'s bus (an unknown source is not counted)."""
    stack = Stack.of(archive)
    source = archive.source_arn
    for arn in rule._archive_bus_arns():
        if source == arn or stack.resolve(source) == stack.resolve(arn):
            return True
        if Token.is_unresolved(source) or not Token.is_unresolved(arn):
            continue
        # A literal ARN of a bus the rule names by a partly resolved ARN (the default bus, in its stack's env).
        own, their = Arn.split(source, ArnFormat.SLASH_RESOURCE_NAME), Stack.of(rule)
        parsed = Arn.split(arn, ArnFormat.SLASH_RESOURCE_NAME)
        if (own.service, own.resource, own.resource_name) == ("events", "event-bus", parsed.resource_name) and \
                all(Token.is_unresolved(mine) or mine == theirs
                    for mine, theirs in ((their.region, own.region), (their.account, own.account))):
            return True
    return False


@jsii.implements(IValidation)
class _ArchiveCheck:
    """Archives of the rule's bus, looked for at synthesis: one added after the rule counts, and so does the horizon."""

    def __init__(self, rule: IdempotentEventRule, table: IdempotencyTable) -> None:
        self._rule, self._table = rule, table

    def validate(self) -> list[str]:
        rule, table = self._rule, self._table
        problems = []
        for archive in rule.node.root.node.find_all():
            if not isinstance(archive, events.CfnArchive) or not _archived_bus(archive, rule):
                continue
            days = Stack.of(archive).resolve(archive.retention_days)
            if days is not None and not isinstance(days, (int, float)):
                continue  # a token synthesis cannot read
            ttl = table.retention_seconds
            if days and days * DAY <= ttl:
                continue
            if days:
                kept = f"keeps its events {days:g} days ({int(days * DAY)}s)"
                raise_it = ("or raise the horizon to at least the archive's retention (IdempotencyTable(record_ttl="
                            f"Duration.days({days:g})) or more RetryHorizon parts)")
            else:
                kept, raise_it = "keeps its events forever (retention 0 or unset)", "(no horizon covers forever)"
            # Named as the app names it: the events.Archive whose L1 this is (jsii proxies: compare paths).
            owner, where = archive.node.scope, archive.node.path
            if owner is not None and owner.node.default_child is not None and \
                    owner.node.default_child.node.path == where:
                where = owner.node.path
            problems.append(
                f"{rule.node.path}: the archive {where} of the rule's bus {kept}, longer than the records "
                f"of {table.node.path} live ({ttl}s = {ttl / DAY:g} days: its record_ttl or retry horizon). "
                "Replaying the archive after a record expired delivers the event again as a first request, and "
                f"the effect runs twice. Fix: shorten the archive's retention to at most {ttl // DAY} days "
                f"(retention=Duration.days({ttl // DAY})), {raise_it}.")
        return problems
