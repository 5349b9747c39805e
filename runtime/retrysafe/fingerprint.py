"""Request fingerprints: a hash of a canonical form of what was asked.

Only the hash is stored, never the payload. JSON bodies are canonicalised
(sorted keys, no insignificant whitespace) so that two serialisations of the
same document match; everything else is hashed as raw bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable


def canonical_json(body: bytes) -> bytes | None:
    """The canonical serialisation of a JSON document, or ``None`` if ``body`` is not JSON."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def fingerprint(parts: Iterable[bytes | str]) -> str:
    """Hash length-prefixed ``parts`` into a short, printable fingerprint (SHA-256, base64url)."""
    buffer = bytearray()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        buffer += len(data).to_bytes(8, "big")
        buffer += data
    return base64.urlsafe_b64encode(hashlib.sha256(buffer).digest()).rstrip(b"=").decode("ascii")
