"""Verification of completion callbacks (Standard Webhooks: HMAC-SHA256, several secrets)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from typing import Any, Callable, List, Mapping, NamedTuple, Optional, Sequence, Union, cast

from ._errors import SwitchyardError
from ._types import JobCompletedEvent

_SECRET_PREFIX = "whsec_"
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_TIMESTAMP = re.compile(r"^\d{1,15}$")

#: Codes of WebhookVerificationError, naming the check that failed.
VERIFICATION_CODES = (
    "missing_header",
    "invalid_timestamp",
    "timestamp_too_old",
    "timestamp_too_new",
    "no_matching_signature",
    "invalid_secret",
    "invalid_body",
)


class WebhookVerificationError(SwitchyardError):
    """The callback is not authentic or not fresh; `code` names the failed check."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class VerifiedWebhook(NamedTuple):
    """`id` is the dedup key: the hub sends the same webhook-id on every retry of one callback."""

    id: str
    timestamp: int


Headers = Union[Mapping[str, str], Any]
"""A mapping of header names to values in any case (a dict, http.client's HTTPMessage, ...)."""


def _decode_base64(text: str) -> Optional[bytes]:
    if not _BASE64.match(text) or len(text.rstrip("=")) % 4 == 1:
        return None
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _parse_secret(secret: str, index: int) -> bytes:
    def fail(why: str) -> WebhookVerificationError:
        return WebhookVerificationError("invalid_secret", f"secret #{index + 1}: {why}")

    if not isinstance(secret, str) or not secret.startswith(_SECRET_PREFIX):
        raise fail(f'must start with "{_SECRET_PREFIX}"')
    key = _decode_base64(secret[len(_SECRET_PREFIX) :])
    if key is None:
        raise fail("is not valid base64 after the prefix")
    # The hub issues 24 to 64 byte keys; anything else is a truncated or mistyped secret.
    if not 24 <= len(key) <= 64:
        raise fail(f"decodes to {len(key)} bytes, not 24-64")
    return key


def _header(headers: Headers, name: str) -> str:
    value: Optional[str] = None
    getter = getattr(headers, "get", None)
    if getter is not None:
        value = getter(name)
    if value is None and hasattr(headers, "items"):
        for key, candidate in headers.items():
            if isinstance(key, str) and key.lower() == name:
                value = candidate
                break
    if isinstance(value, (list, tuple)):
        value = " ".join(value)
    if not isinstance(value, str) or not value.strip():
        raise WebhookVerificationError("missing_header", f"missing header {name}")
    return value.strip()


def _check_timestamp(text: str, tolerance: int, now: float) -> int:
    if not _TIMESTAMP.match(text):
        raise WebhookVerificationError("invalid_timestamp", "webhook-timestamp is not unix seconds")
    timestamp = int(text)
    now_sec = int(now)
    if now_sec - timestamp > tolerance:
        raise WebhookVerificationError(
            "timestamp_too_old", f"webhook-timestamp is more than {tolerance} s in the past"
        )
    if timestamp - now_sec > tolerance:
        raise WebhookVerificationError(
            "timestamp_too_new", f"webhook-timestamp is more than {tolerance} s in the future"
        )
    return timestamp


def verify_webhook(
    raw_body: Union[bytes, str],
    headers: Headers,
    secrets: Sequence[str],
    *,
    tolerance: int = 300,
    now: Optional[Callable[[], float]] = None,
) -> VerifiedWebhook:
    """Checks headers, freshness (within ±tolerance seconds) and at least one `v1,` signature
    matching one of `secrets` (several allow rotation). Pass the raw body exactly as received."""
    if isinstance(secrets, str) or len(secrets) == 0:
        raise WebhookVerificationError("invalid_secret", "give a list of one or more secrets")
    keys: List[bytes] = [_parse_secret(s, i) for i, s in enumerate(secrets)]
    webhook_id = _header(headers, "webhook-id")
    timestamp_text = _header(headers, "webhook-timestamp")
    signature_header = _header(headers, "webhook-signature")
    timestamp = _check_timestamp(timestamp_text, tolerance, (now or time.time)())

    # Only v1 entries count; other versions are skipped so senders can add schemes later.
    candidates = [
        decoded
        for part in signature_header.split(" ")
        if part.startswith("v1,")
        for decoded in [_decode_base64(part[3:])]
        if decoded is not None
    ]
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    signed = f"{webhook_id}.{timestamp_text}.".encode("utf-8") + body
    for key in keys:
        expected = hmac.new(key, signed, hashlib.sha256).digest()
        if any(hmac.compare_digest(expected, c) for c in candidates):
            return VerifiedWebhook(webhook_id, timestamp)
    raise WebhookVerificationError(
        "no_matching_signature", "no webhook-signature matches any given secret"
    )


def verify_callback(
    raw_body: Union[bytes, str],
    headers: Headers,
    secrets: Sequence[str],
    *,
    tolerance: int = 300,
    now: Optional[Callable[[], float]] = None,
) -> JobCompletedEvent:
    """Verifies a completion callback and returns its parsed event. Pass the raw body as received
    and every secret you accept (old and new during a rotation). Deduplicate on the webhook-id
    header. Raises WebhookVerificationError. Check `event["type"]`: new types may be added."""
    verify_webhook(raw_body, headers, secrets, tolerance=tolerance, now=now)
    try:
        event = json.loads(raw_body)
    except ValueError:
        raise WebhookVerificationError("invalid_body", "the signed body is not JSON") from None
    if not isinstance(event, dict):
        raise WebhookVerificationError("invalid_body", "the signed body is not a JSON object")
    return cast(JobCompletedEvent, event)
