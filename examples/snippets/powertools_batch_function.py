"""Powertools' SQS batch example with the record handler's decorator line and imports changed, and nothing
else but the configuration lines that went with them (the migration guide's closest port)."""

# --8<-- [start:batch-function-after]
import uuid
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from retrysafe import idempotent_function, register_lambda_context

from examples.snippets.payments import payments

processor = BatchProcessor(event_type=EventType.SQS)


@idempotent_function(data_keyword_argument="record", key="messageId")
def record_handler(record: SQSRecord) -> dict[str, Any]:
    charge = payments.charge(amount=1, idempotency_key=str(uuid.uuid4()))
    return {"message": record.body, "charge": charge.id}


def lambda_handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    register_lambda_context(context)
    return process_partial_response(event=event, context=context, processor=processor,
                                    record_handler=record_handler)
# --8<-- [end:batch-function-after]
