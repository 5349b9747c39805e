"""Claim checks: content too large for a message is stored in S3 and the message carries a pointer.

The pointer is ``{"bucket", "key", "size", "sha256"}``. The object is written
with server-side encryption before the message that refers to it is committed,
and it expires with the bucket's lifecycle rule (the constructs set it to the
retry horizon). ``RETRYSAFE_CLAIM_CHECK_BUCKET`` names the bucket (the
constructs set it and grant put to producers, get to consumers); objects live
under :data:`~retrysafe.names.CLAIM_CHECK_PREFIX`.

The envelope format of a claim-checked outbox event is defined here, and only
retrysafe writes it: the pointer travels as the envelope's top-level
:data:`retrysafe.names.CLAIM_CHECK_ENVELOPE_FIELD` member (``claim_check``), which the outbox writes from
``txn.append_event(..., claim_check=pointer)`` (the webhook receiver's large
bodies) and which no payload can produce (a payload is always the envelope's
``payload`` member). The payload of such an event says ``"body_encoding": "s3"``.
A consumer (:func:`resolve`, used by ``@idempotent_sqs``) fetches the object back
only for such an envelope, only from its own configured bucket and prefix, reads
at most the pointer's size (itself bounded), verifies the size and the SHA-256,
and hands the handler the payload with ``body`` (UTF-8 text, else base64) and
``body_encoding`` as a small body would have arrived. Every other content, a
payload that says ``"body_encoding": "s3"`` included, passes through untouched.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from typing import Any

from . import names
from .errors import ClaimCheckError, ConfigurationError

#: ``body_encoding`` of a payload whose body is in S3 (the envelope's ``names.CLAIM_CHECK_ENVELOPE_FIELD`` points to it).
S3_ENCODING = "s3"
#: The largest object a pointer may name (Lambda's synchronous payload limit: no webhook body is larger).
DEFAULT_MAX_OBJECT_BYTES = 6 * 1024 * 1024

Pointer = dict[str, Any]


def encode_body(body: bytes) -> tuple[str, str]:
    """The body as text: UTF-8 when it decodes, else base64; with the encoding's name."""
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), "base64"


class ClaimCheck:
    """Writes and reads claim-checked content in one bucket, under one key prefix.

    ``max_object_bytes`` bounds what :meth:`fetch` reads: a pointer naming a larger
    object is refused before anything is read.
    """

    def __init__(self, bucket: str, client: Any = None, *, prefix: str = names.CLAIM_CHECK_PREFIX,
                 max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES) -> None:
        if not bucket:
            raise ConfigurationError("a claim check needs a bucket name")
        if not prefix:
            raise ConfigurationError("a claim check needs a key prefix (its objects are granted by prefix)")
        self.bucket = bucket
        self.prefix = prefix
        self.max_object_bytes = max_object_bytes
        self._client = client

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClaimCheck | None:
        """The bucket of ``RETRYSAFE_CLAIM_CHECK_BUCKET``, or ``None`` when it is not set."""
        env = os.environ if environ is None else environ
        bucket = env.get(names.CLAIM_CHECK_BUCKET_ENV)
        return cls(bucket) if bucket else None

    @property
    def client(self) -> Any:
        """The S3 client (created on first use)."""
        if self._client is None:
            import boto3

            self._client = boto3.client("s3")
        return self._client

    def pointer(self, key: str, body: bytes) -> Pointer:
        """The pointer ``body`` will have under ``key`` (nothing is written)."""
        if not key.startswith(self.prefix):
            raise ConfigurationError(f"claim-check keys live under {self.prefix!r}, not {key!r}")
        return {"bucket": self.bucket, "key": key, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()}

    def put(self, key: str, body: bytes) -> Pointer:
        """Store ``body`` under ``key`` (SSE-S3) and return its pointer. Writing the same bytes again is harmless."""
        pointer = self.pointer(key, body)
        self.client.put_object(Bucket=self.bucket, Key=key, Body=body, ServerSideEncryption="AES256",
                               Metadata={"sha256": pointer["sha256"]})
        return pointer

    def fetch(self, pointer: Any) -> bytes:
        """The bytes ``pointer`` refers to, verified against its size and SHA-256.

        Raises :class:`ClaimCheckError` for a pointer that is malformed, names another bucket,
        a key outside the prefix or an object over ``max_object_bytes`` (nothing is read), or whose
        object is gone or altered. Throttling and 5xx answers are raised as they are (retried).
        """
        bucket, key, size, digest = _parse(pointer)
        if bucket != self.bucket or not key.startswith(self.prefix):
            raise ClaimCheckError(f"the claim-check pointer names s3://{bucket}/{key}, outside this consumer's "
                                  f"s3://{self.bucket}/{self.prefix}: not fetched")
        if not 0 <= size <= self.max_object_bytes:
            raise ClaimCheckError(f"the claim-check pointer says {size} bytes; at most {self.max_object_bytes} "
                                  "are fetched")
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=bucket, Key=key)
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code not in ("NoSuchKey", "404", "AccessDenied", "403"):  # throttling, 5xx: raised as is, retried
                raise
            # Without s3:ListBucket (the constructs grant GetObject only) a missing object answers AccessDenied.
            raise ClaimCheckError(f"s3://{bucket}/{key} is gone or not readable ({code}; expired after the retry "
                                  "horizon?)") from None
        stream = response["Body"]
        try:
            if int(response.get("ContentLength", size)) != size:
                raise ClaimCheckError(f"s3://{bucket}/{key} does not match its pointer's size")
            body: bytes = stream.read(size + 1)  # never more than the pointer promised (and one byte to tell)
        finally:
            stream.close()
        if len(body) != size or hashlib.sha256(body).hexdigest() != digest:
            raise ClaimCheckError(f"s3://{bucket}/{key} does not match its pointer's size and SHA-256")
        return body


def _parse(pointer: Any) -> tuple[str, str, int, str]:
    if not isinstance(pointer, Mapping):
        raise ClaimCheckError("the claim-check pointer is not an object with bucket, key, size and sha256")
    bucket, key, size, digest = (pointer.get(name) for name in ("bucket", "key", "size", "sha256"))
    if not (isinstance(bucket, str) and isinstance(key, str) and isinstance(digest, str)
            and isinstance(size, int) and not isinstance(size, bool)):
        raise ClaimCheckError("the claim-check pointer lacks bucket, key, size or sha256")
    return bucket, key, size, digest


def resolve(content: Any, check: ClaimCheck | None) -> Any:
    """An outbox envelope with its claim-checked body fetched back inline; any other content unchanged.

    Only an envelope carrying :data:`retrysafe.names.CLAIM_CHECK_ENVELOPE_FIELD` (which only the outbox writes) is resolved:
    its payload loses ``body_encoding: "s3"`` and gets ``body`` and ``body_encoding`` (``utf-8`` or
    ``base64``), and the pointer is dropped. Raises :class:`ClaimCheckError` when this consumer has
    no claim-check bucket, or when :meth:`ClaimCheck.fetch` refuses the pointer.
    """
    if not isinstance(content, dict) or names.CLAIM_CHECK_ENVELOPE_FIELD not in content:
        return content
    payload = content.get("payload")
    if not isinstance(payload, dict):
        raise ClaimCheckError("a claim-checked envelope must carry an object payload")
    if check is None:
        raise ClaimCheckError(f"the event's body is in S3 but this consumer has no claim-check bucket: set "
                              f"{names.CLAIM_CHECK_BUCKET_ENV} (or pass claim_check=)")
    text, encoding = encode_body(check.fetch(content[names.CLAIM_CHECK_ENVELOPE_FIELD]))
    envelope = {k: v for k, v in content.items() if k != names.CLAIM_CHECK_ENVELOPE_FIELD}
    return {**envelope, "payload": {**payload, "body": text, "body_encoding": encoding}}
