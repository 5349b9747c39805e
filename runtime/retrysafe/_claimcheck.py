"""Claim checks: content too large for a message is stored in S3 and the message carries a pointer.

The pointer is ``{"bucket", "key", "size", "sha256"}``. The object is written
with server-side encryption before the message that refers to it is committed,
and it expires with the bucket's lifecycle rule (the constructs set it to the
retry horizon). Readers verify the size and the SHA-256, so a pointer can only
ever yield the bytes it was made for. ``RETRYSAFE_CLAIM_CHECK_BUCKET`` names
the bucket (the constructs set it and grant put to producers, get to consumers).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

from . import names
from .errors import ClaimCheckError, ConfigurationError

#: Marks a webhook receipt whose body is in S3 (``body_ref`` holds the pointer).
S3_ENCODING = "s3"


class ClaimCheck:
    """Writes and reads claim-checked content in one bucket."""

    def __init__(self, bucket: str, client: Any = None) -> None:
        if not bucket:
            raise ConfigurationError("a claim check needs a bucket name")
        self.bucket = bucket
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

    def put(self, key: str, body: bytes) -> dict[str, Any]:
        """Store ``body`` under ``key`` (SSE-S3) and return its pointer. Writing the same bytes again is harmless."""
        digest = hashlib.sha256(body).hexdigest()
        self.client.put_object(Bucket=self.bucket, Key=key, Body=body, ServerSideEncryption="AES256",
                               Metadata={"sha256": digest})
        return {"bucket": self.bucket, "key": key, "size": len(body), "sha256": digest}


def fetch(pointer: Mapping[str, Any], client: Any = None) -> bytes:
    """The bytes a pointer refers to, verified against its size and SHA-256 (:class:`ClaimCheckError` otherwise)."""
    try:
        bucket, key, size, digest = (str(pointer["bucket"]), str(pointer["key"]), int(pointer["size"]),
                                     str(pointer["sha256"]))
    except (KeyError, TypeError, ValueError):
        raise ClaimCheckError("the claim-check pointer lacks bucket, key, size or sha256") from None
    if client is None:
        import boto3

        client = boto3.client("s3")
    from botocore.exceptions import ClientError

    try:
        body: bytes = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code not in ("NoSuchKey", "404", "AccessDenied", "403"):  # throttling, 5xx: raised as is, retried
            raise
        # Without s3:ListBucket (the constructs grant GetObject only) a missing object answers AccessDenied.
        raise ClaimCheckError(f"s3://{bucket}/{key} is gone or not readable ({code}; expired after the retry "
                              "horizon?)") from None
    if len(body) != size or hashlib.sha256(body).hexdigest() != digest:
        raise ClaimCheckError(f"s3://{bucket}/{key} does not match its pointer's size and SHA-256")
    return body


def resolve_receipt(content: Any, client: Any = None) -> Any:
    """A webhook receipt envelope with its S3 body fetched back inline; anything else unchanged.

    The receipt's ``body_ref`` pointer is replaced by ``body`` (text, or base64
    when the bytes are not UTF-8) exactly as a small body would have arrived.
    """
    payload = content.get("payload") if isinstance(content, dict) else None
    if not isinstance(payload, dict) or payload.get("body_encoding") != S3_ENCODING:
        return content
    ref = payload.get("body_ref")
    if not isinstance(ref, Mapping):
        raise ClaimCheckError("the receipt says its body is in S3 but carries no body_ref pointer")
    from .webhook._receipt import encode_body

    text, encoding = encode_body(fetch(ref, client))
    inline = {k: v for k, v in payload.items() if k != "body_ref"}
    return {**content, "payload": {**inline, "body": text, "body_encoding": encoding}}
