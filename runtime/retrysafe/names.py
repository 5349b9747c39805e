"""The names the runtime, its constructs and its tests must agree on: retrysafe's wire format.

Environment variables (set by ``retrysafe_cdk``, read by the runtime), the idempotency table's
key, TTL and outbox index attributes, the outbox item's kind and event source, the Step Functions
task payload's fields, the HTTP headers, the lease margin and the handler paths the constructs
deploy. Each is defined here once; the runtime, ``retrysafe_cdk``, the sandbox, the pytest plugin
and the tests import it. The metrics are in :mod:`retrysafe.metrics`; the Step Functions error names are the
exception classes' names (:data:`retrysafe.stepfunctions.RETRIABLE_ERRORS`...).

A value here is part of what is deployed: records in a table, functions' environment and
handlers, state machines' payloads. Renaming one breaks what runs with the old value, so the
documentation's "Names and wire format" table lists every value and a test keeps the two equal.

This module imports nothing: ``retrysafe_cdk`` imports it at synthesis time.
"""

from __future__ import annotations

# -- environment variables -------------------------------------------------------------------

#: Name of the idempotency table.
TABLE_ENV = "RETRYSAFE_TABLE"
#: How long a record is kept, seconds (the business retry horizon).
HORIZON_ENV = "RETRYSAFE_RETRY_HORIZON_SECONDS"
#: Lease of a claim when the Lambda context gives no remaining time, seconds.
LEASE_ENV = "RETRYSAFE_LEASE_SECONDS"
#: ``true`` to check the table with one ``DescribeTable`` at cold start.
VERIFY_ENV = "RETRYSAFE_VERIFY_TABLE"
#: ``true`` to run handlers without deduplication, in unit tests that do not test idempotency (refused,
#: at cold start, inside Lambda's execution environment).
IDEMPOTENCY_DISABLED_ENV = "RETRYSAFE_IDEMPOTENCY_DISABLED"
#: CloudWatch namespace of the runtime's metrics.
METRICS_NAMESPACE_ENV = "RETRYSAFE_METRICS_NAMESPACE"
#: Service name of the runtime's log lines.
SERVICE_ENV = "RETRYSAFE_SERVICE"
#: Cut-over from Powertools idempotency: the table the old code wrote its records to.
POWERTOOLS_TABLE_ENV = "RETRYSAFE_POWERTOOLS_TABLE"
#: Cut-over from Powertools idempotency: the end of the window, epoch seconds (no lookup after it).
POWERTOOLS_UNTIL_ENV = "RETRYSAFE_POWERTOOLS_UNTIL"
#: Cut-over from Powertools idempotency: the old Lambda function's name, which Powertools prefixed its keys with
#: (its ``AWS_LAMBDA_FUNCTION_NAME``), when the new function has another one.
POWERTOOLS_LAMBDA_FUNCTION_NAME_ENV = "RETRYSAFE_POWERTOOLS_LAMBDA_FUNCTION_NAME"
#: Cut-over from Powertools idempotency: the ``key_prefix=`` the old code passed (its keys' whole prefix).
POWERTOOLS_KEY_PREFIX_ENV = "RETRYSAFE_POWERTOOLS_KEY_PREFIX"
#: The store's transport: ``botocore`` (the default) or ``crt``, the fast transport on awscrt (the
#: ``retrysafe[crt]`` extra), which falls back to botocore, with a log line, where it does not apply.
TRANSPORT_ENV = "RETRYSAFE_TRANSPORT"
#: Level of the runtime's log lines.
LOG_LEVEL_ENV = "RETRYSAFE_LOG_LEVEL"
#: An SQS consumer's queue visibility timeout, seconds (its claim lease in claim-first mode).
VISIBILITY_TIMEOUT_ENV = "RETRYSAFE_VISIBILITY_TIMEOUT_SECONDS"
#: Every adapter's default subscriber (the scope of the function's records), set per deployed function by the
#: constructs (a stable name, not the function's physical name, which changes when the function is replaced);
#: else ``AWS_LAMBDA_FUNCTION_NAME``; the decorator's ``subscriber=`` wins.
SUBSCRIBER_ENV = "RETRYSAFE_SUBSCRIBER"
#: Set by Lambda: the function's name (the default subscriber where the constructs set none).
LAMBDA_FUNCTION_NAME_ENV = "AWS_LAMBDA_FUNCTION_NAME"
#: The default subscriber outside Lambda (no ``RETRYSAFE_SUBSCRIBER``, no ``AWS_LAMBDA_FUNCTION_NAME``).
LOCAL_SUBSCRIBER = "local"
#: The outbox target: an EventBridge bus name or ARN, an SNS topic ARN or an SQS queue URL (exactly one).
EVENT_BUS_ENV = "RETRYSAFE_EVENT_BUS"
TOPIC_ENV = "RETRYSAFE_TOPIC_ARN"
QUEUE_ENV = "RETRYSAFE_QUEUE_URL"
#: ``source`` of the events published to an EventBridge bus.
EVENT_SOURCE_ENV = "RETRYSAFE_EVENT_SOURCE"
#: The outbox target's kind (one of :data:`TARGET_KINDS`), for functions that append events.
OUTBOX_TARGET_ENV = "RETRYSAFE_OUTBOX_TARGET"
#: An SNS topic's or SQS queue's ``MaximumMessageSize`` when raised above 256 KiB.
OUTBOX_MAX_MESSAGE_ENV = "RETRYSAFE_OUTBOX_MAX_MESSAGE_BYTES"
#: The sweeper republishes unpublished events older than this, seconds.
SWEEP_AFTER_ENV = "RETRYSAFE_SWEEP_AFTER_SECONDS"
#: S3 bucket of claim-checked webhook bodies.
CLAIM_CHECK_BUCKET_ENV = "RETRYSAFE_CLAIM_CHECK_BUCKET"
#: The webhook signing secret: a Secrets Manager ARN or an SSM parameter name (exactly one).
WEBHOOK_SECRET_ARN_ENV = "RETRYSAFE_WEBHOOK_SECRET_ARN"
WEBHOOK_SECRET_PARAMETER_ENV = "RETRYSAFE_WEBHOOK_SECRET_PARAMETER"
#: The webhook provider (``github``...).
WEBHOOK_PROVIDER_ENV = "RETRYSAFE_WEBHOOK_PROVIDER"
#: A webhook receiver's tenant: the sender, the receipts' ``source`` (default the provider's name).
WEBHOOK_TENANT_ENV = "RETRYSAFE_WEBHOOK_TENANT"
#: The default home region of the idempotency records when the table has replicas (global tables): every
#: claim and commit of a tenant not listed in :data:`TENANT_HOME_REGIONS_ENV` is sent to this region.
HOME_REGION_ENV = "RETRYSAFE_HOME_REGION"
#: A JSON object of tenant to home region, for tenants whose records live in another region than the default.
TENANT_HOME_REGIONS_ENV = "RETRYSAFE_TENANT_HOME_REGIONS"

# -- webhooks --------------------------------------------------------------------------------

#: Values of :data:`WEBHOOK_PROVIDER_ENV`: the signature schemes the receiver verifies.
WEBHOOK_PROVIDERS = ("github", "stripe", "standard", "hmac")
#: Type of the outbox event a webhook receiver appends for each delivery.
WEBHOOK_RECEIPT_EVENT = "WebhookReceived"
#: Object key prefix of claim-checked webhook bodies in :data:`CLAIM_CHECK_BUCKET_ENV`'s bucket.
CLAIM_CHECK_PREFIX = "webhooks/"
#: The outbox envelope's member carrying a claim check's pointer (only the outbox writes it; a payload cannot).
CLAIM_CHECK_ENVELOPE_FIELD = "claim_check"

# -- HTTP -----------------------------------------------------------------------------------

#: The request header carrying the idempotency key (the IETF draft's name).
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
#: The response header (``true``) that marks a replayed response.
REPLAYED_HEADER = "Idempotent-Replayed"
#: retrysafe's request header naming the attempt (``1`` the first, ``2`` the first retry...): a client that
#: sends ``2`` or more hints that the request may already have been processed.
RETRY_ATTEMPT_HEADER = "Retry-Attempt"
#: The header the AWS SDKs send on every attempt (``attempt=2; max=3``): ``attempt`` above 1 is a retry.
AWS_SDK_REQUEST_HEADER = "amz-sdk-request"

# -- the idempotency table -------------------------------------------------------------------

#: The table's partition key (S), alone.
PARTITION_KEY = "pk"
#: The table's TTL attribute (epoch seconds), also compared in every condition.
TTL_ATTRIBUTE = "exp"
#: The sparse global secondary index the outbox sweeper queries.
OUTBOX_INDEX = "outbox-unpublished"
#: Its partition key (S): the unpublished marker, removed once an event is published.
UNPUBLISHED_ATTRIBUTE = "obq"
#: Its sort key (S): when the event was committed (ISO-8601 UTC, the committing runtime's clock; never the
#: ``occurred_at`` a handler supplies, which is data): the sweeper selects events by their age in the outbox.
COMMITTED_AT_ATTRIBUTE = "at"
#: Partition key prefix of idempotency records.
RECORD_PREFIX = "idem#"
#: The adapters, each its own record namespace: hashed into every record id (with tenant, operation
#: and key), so an HTTP tenant and an SQS subscriber of the same name never share records.
HTTP_ADAPTER = "http"
SQS_ADAPTER = "sqs"
WEBHOOK_ADAPTER = "webhook"
TASK_ADAPTER = "task"
EVENT_ADAPTER = "event"
FUNCTION_ADAPTER = "function"
KINESIS_ADAPTER = "kinesis"
DYNAMODB_STREAM_ADAPTER = "dynamodb-stream"
ADAPTERS = (HTTP_ADAPTER, SQS_ADAPTER, WEBHOOK_ADAPTER, TASK_ADAPTER, EVENT_ADAPTER, FUNCTION_ADAPTER, KINESIS_ADAPTER,
            DYNAMODB_STREAM_ADAPTER)
#: Partition key prefix of outbox events.
OUTBOX_PREFIX = "outbox#"
#: Attribute naming an item's kind; outbox events have :data:`OUTBOX_KIND` (the stream filter selects them).
KIND_ATTRIBUTE = "kind"
OUTBOX_KIND = "outbox"

# -- the outbox targets ----------------------------------------------------------------------

#: Default ``source`` of outbox events on an EventBridge bus.
DEFAULT_EVENT_SOURCE = "retrysafe.outbox"
#: Values of :data:`OUTBOX_TARGET_ENV`.
EVENTBRIDGE_TARGET = "eventbridge"
SNS_TARGET = "sns"
SQS_TARGET = "sqs"
TARGET_KINDS = (EVENTBRIDGE_TARGET, SNS_TARGET, SQS_TARGET)
#: The largest ``MaximumMessageSize`` of an SNS topic or SQS queue (bytes).
MAX_MESSAGE_BYTES = 1024 * 1024
#: SNS/SQS message attribute carrying the event id (consumers' idempotency key); SQS consumers read it too.
KEY_MESSAGE_ATTRIBUTE = "idempotency-key"
#: SNS/SQS message attribute carrying the event type.
EVENT_TYPE_MESSAGE_ATTRIBUTE = "event-type"

# -- Step Functions tasks --------------------------------------------------------------------

#: Fields of the ``LambdaInvoke`` payload of an idempotent task (from the context object).
TASK_EXECUTION = "execution"
TASK_STATE = "state"
TASK_STATE_MACHINE = "stateMachine"
TASK_RETRY_COUNT = "retryCount"
TASK_INPUT = "input"
TASK_ITERATION = "iteration"

# -- timing ----------------------------------------------------------------------------------

#: Extra lease beyond the Lambda's remaining time, so a claim never lapses while its invocation
#: can still be alive (clock skew, freeze/thaw). The Step Functions retry policy waits it out.
LEASE_MARGIN_SECONDS = 2.0
#: The shortest retry horizon either side accepts: records must outlive a day of retries.
MIN_HORIZON_SECONDS = 86_400

# -- handlers the constructs deploy from the runtime layer -----------------------------------

OUTBOX_PUBLISHER_HANDLER = "retrysafe.outbox.publisher.handler"
OUTBOX_SWEEPER_HANDLER = "retrysafe.outbox.sweeper.handler"
OUTBOX_PIPE_HANDLER = "retrysafe.outbox.pipe.handler"
WEBHOOK_HANDLER = "retrysafe.webhook.handler"
#: Every handler path the constructs deploy (``module.attribute``); each resolves to a callable.
HANDLERS = (OUTBOX_PUBLISHER_HANDLER, OUTBOX_SWEEPER_HANDLER, OUTBOX_PIPE_HANDLER, WEBHOOK_HANDLER)

__all__ = [
            "ADAPTERS",
            "AWS_SDK_REQUEST_HEADER",
            "CLAIM_CHECK_BUCKET_ENV",
            "CLAIM_CHECK_ENVELOPE_FIELD",
            "CLAIM_CHECK_PREFIX",
            "COMMITTED_AT_ATTRIBUTE",
            "DEFAULT_EVENT_SOURCE",
            "DYNAMODB_STREAM_ADAPTER",
            "EVENTBRIDGE_TARGET",
            "EVENT_ADAPTER",
            "EVENT_BUS_ENV",
            "EVENT_SOURCE_ENV",
            "EVENT_TYPE_MESSAGE_ATTRIBUTE",
            "FUNCTION_ADAPTER",
            "HANDLERS",
            "HOME_REGION_ENV",
            "HORIZON_ENV",
            "HTTP_ADAPTER",
            "IDEMPOTENCY_DISABLED_ENV",
            "IDEMPOTENCY_KEY_HEADER",
            "KEY_MESSAGE_ATTRIBUTE",
            "KIND_ATTRIBUTE",
            "KINESIS_ADAPTER",
            "LAMBDA_FUNCTION_NAME_ENV",
            "LEASE_ENV",
            "LEASE_MARGIN_SECONDS",
            "LOCAL_SUBSCRIBER",
            "LOG_LEVEL_ENV",
            "MAX_MESSAGE_BYTES",
            "METRICS_NAMESPACE_ENV",
            "MIN_HORIZON_SECONDS",
            "OUTBOX_INDEX",
            "OUTBOX_KIND",
            "OUTBOX_MAX_MESSAGE_ENV",
            "OUTBOX_PIPE_HANDLER",
            "OUTBOX_PREFIX",
            "OUTBOX_PUBLISHER_HANDLER",
            "OUTBOX_SWEEPER_HANDLER",
            "OUTBOX_TARGET_ENV",
            "PARTITION_KEY",
            "POWERTOOLS_KEY_PREFIX_ENV",
            "POWERTOOLS_LAMBDA_FUNCTION_NAME_ENV",
            "POWERTOOLS_TABLE_ENV",
            "POWERTOOLS_UNTIL_ENV",
            "QUEUE_ENV",
            "RECORD_PREFIX",
            "REPLAYED_HEADER",
            "RETRY_ATTEMPT_HEADER",
            "SERVICE_ENV",
            "SNS_TARGET",
            "SQS_ADAPTER",
            "SQS_TARGET",
            "SUBSCRIBER_ENV",
            "SWEEP_AFTER_ENV",
            "TABLE_ENV",
            "TARGET_KINDS",
            "TASK_ADAPTER",
            "TASK_EXECUTION",
            "TASK_INPUT",
            "TASK_ITERATION",
            "TASK_RETRY_COUNT",
            "TASK_STATE",
            "TASK_STATE_MACHINE",
            "TENANT_HOME_REGIONS_ENV",
            "TOPIC_ENV",
            "TTL_ATTRIBUTE",
            "UNPUBLISHED_ATTRIBUTE",
            "VERIFY_ENV",
            "VISIBILITY_TIMEOUT_ENV",
            "WEBHOOK_ADAPTER",
            "WEBHOOK_HANDLER",
            "WEBHOOK_PROVIDERS",
            "WEBHOOK_PROVIDER_ENV",
            "WEBHOOK_RECEIPT_EVENT",
            "WEBHOOK_SECRET_ARN_ENV",
            "WEBHOOK_SECRET_PARAMETER_ENV",
            "WEBHOOK_TENANT_ENV",
        ]
