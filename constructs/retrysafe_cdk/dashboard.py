"""``Dashboard``: the CloudWatch dashboard an on-call engineer opens first for a retrysafe service."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_cloudwatch as cloudwatch

from constructs import Construct

from .events import IdempotentEventRule
from .function import IdempotentFunction
from .outbox import Outbox, OutboxPipe
from .queue import IdempotentQueueConsumer
from .sns import IdempotentTopicSubscription
from .streams import IdempotentStreamConsumer
from .table import IdempotencyTable

_WIDTH = 8


def _graph(title: str, metrics: Sequence[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(metrics), width=_WIDTH)


class Dashboard(Construct):
    """One dashboard for a service built from the retrysafe constructs.

    :param table: the :class:`IdempotencyTable` (required).
    :param functions: whose executions to chart (Lambda ``Invocations``). @default none.
    :param outboxes: whose publisher lag to chart (``IteratorAge``) and failure queues. @default none.
    :param pipes: whose failure queues to chart. @default none.
    :param consumers: whose dead-letter queues to chart (queue consumers, event rules, topic
        subscriptions). @default none.
    :param streams: whose failure queues to chart (stream consumers). @default none.
    :param dashboard_name: @default CloudFormation's generated name.

    Widgets, in order: executions; replays; key mismatches (422); in-flight conflicts (409);
    fencing rejections; publisher lag; parked outbox events; DLQ and failure queue depth. The
    retrysafe metrics come from ``table.metric(...)``, with the runtime's namespace and dimensions.
    Attributes: ``dashboard``, ``widgets``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable,
                 functions: Sequence[IdempotentFunction] = (), outboxes: Sequence[Outbox] = (),
                 pipes: Sequence[OutboxPipe] = (),
                 consumers: Sequence[IdempotentQueueConsumer | IdempotentEventRule | IdempotentTopicSubscription] = (),
                 streams: Sequence[IdempotentStreamConsumer] = (), dashboard_name: str | None = None) -> None:
        super().__init__(scope, construct_id)
        queues = [c.metric_dlq_depth(label=f"{c.node.id} DLQ") for c in consumers]
        failure_queues = [(o.node.id, o.failure_queue) for o in outboxes] + [(p.node.id, p.failure_queue) for p in pipes]
        failure_queues += [(s.node.id, s.failure_queue) for s in streams]
        queues += [queue.metric_approximate_number_of_messages_visible(statistic="Maximum", label=f"{name} failures")
                   for name, queue in failure_queues]
        self.widgets: list[cloudwatch.IWidget] = [
            _graph("Executions (invocations)", [f.function.metric_invocations(statistic="Sum", label=f.node.id)
                                                for f in functions]),
            _graph("Replays", [table.metric_replays()]),
            _graph("Key mismatches (422)", [table.metric_key_mismatches()]),
            _graph("In-flight conflicts (409)", [table.metric_in_flight_conflicts()]),
            _graph("Fencing rejections", [table.metric_fencing_rejections()]),
            _graph("Publisher lag (iterator age, ms)", [o.metric_iterator_age(label=o.node.id) for o in outboxes]),
            _graph("Parked outbox events", [table.metric_parked_events()]),
            _graph("Dead-letter and failure queues (messages)", queues),
        ]
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=dashboard_name,
                                              widgets=[self.widgets[i:i + 3] for i in range(0, len(self.widgets), 3)])
