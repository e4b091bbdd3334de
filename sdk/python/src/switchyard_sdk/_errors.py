"""Typed errors: one class per kind of problem, each carrying the hub's stable `code`."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Type

# The problem codes the hub sends (docs/errors.md) with their HTTP status. `job_final` belongs to
# the cancel endpoint. An unknown code still arrives as an ApiError with that code.
PROBLEM_CODES: Mapping[str, int] = {
    "invalid_request": 400,
    "bad_request": 400,
    "malformed_json": 400,
    "callback_url_refused": 400,
    # Logged by the hub when a client goes away mid-body; a client never receives it.
    "client_disconnected": 400,
    "unauthorized": 401,
    "route_not_allowed": 403,
    "job_not_found": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "request_id_conflict": 409,
    "job_state_conflict": 409,
    "job_final": 409,
    "payload_too_large": 413,
    "uri_too_long": 414,
    "unsupported_media_type": 415,
    "rate_limited": 429,
    "headers_too_large": 431,
    "internal_error": 500,
    "unavailable": 503,
    "storage_full": 503,
}

_RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


class SwitchyardError(Exception):
    """Base of every error this package raises."""


class ApiError(SwitchyardError):
    """A non-2xx answer, parsed from its RFC 9457 problem body. Match on `code`, not the message."""

    def __init__(
        self,
        *,
        status: int,
        code: str,
        title: str,
        detail: Optional[str] = None,
        type: str = "about:blank",
        instance: Optional[str] = None,
        errors: Optional[List[Dict[str, str]]] = None,
        retry_after: Optional[int] = None,
    ) -> None:
        super().__init__(f"{status} {code}: {detail if detail is not None else title}")
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.type = type
        self.instance = instance
        #: Every field problem: {"pointer": RFC 6901 pointer into the request, "message": ...}.
        self.errors: List[Dict[str, str]] = errors or []
        #: Seconds from Retry-After, when the hub sent one (429, 503).
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """True when the same request may be sent again later (429 and 5xx), same request_id."""
        return self.status in _RETRYABLE_STATUSES


class InvalidRequestError(ApiError):
    """400, 413, 414, 415, 431: the request itself is wrong; fix it, do not retry it."""


class AuthenticationError(ApiError):
    """401 unauthorized: no, malformed or unknown token."""


class PermissionDeniedError(ApiError):
    """403 route_not_allowed: the route is unknown or not allowed for this client."""


class NotFoundError(ApiError):
    """404 job_not_found (unknown job, or another client's) or not_found (no such endpoint)."""


class ConflictError(ApiError):
    """409 request_id_conflict (same request_id, other body) or job_final (cancel of a final job)."""


class RateLimitError(ApiError):
    """429 rate_limited; `retry_after` says when to try again."""


class ServerError(ApiError):
    """5xx internal_error, unavailable, storage_full: retry with the same request_id."""


def _class_for(status: int) -> Type[ApiError]:
    if status in (400, 413, 414, 415, 431):
        return InvalidRequestError
    if status >= 500:
        return ServerError
    return {
        401: AuthenticationError,
        403: PermissionDeniedError,
        404: NotFoundError,
        409: ConflictError,
        429: RateLimitError,
    }.get(status, ApiError)


def api_error_from(
    status: int, body: Any, reason: str = "", retry_after: Optional[int] = None
) -> ApiError:
    """The typed error for an answer; a body that is not a problem gives code `http_<status>`."""
    b: Mapping[str, Any] = body if isinstance(body, dict) else {}

    def text(key: str) -> Optional[str]:
        value = b.get(key)
        return value if isinstance(value, str) else None

    errors = b.get("errors")
    return _class_for(status)(
        status=status,
        code=text("code") or f"http_{status}",
        title=text("title") or reason or f"HTTP {status}",
        detail=text("detail"),
        type=text("type") or "about:blank",
        instance=text("instance"),
        errors=errors if isinstance(errors, list) else None,
        retry_after=retry_after,
    )


class NetworkError(SwitchyardError):
    """No answer after all attempts. For run(): call it again with the SAME request_id."""

    def __init__(self, kind: str, attempts: int, request_id: Optional[str] = None) -> None:
        what = "request timed out" if kind == "timeout" else "network error"
        hint = f'; retry with the same request_id "{request_id}"' if request_id else ""
        super().__init__(f"{what} after {attempts} attempt(s){hint}")
        self.kind = kind
        self.attempts = attempts
        self.request_id = request_id


class WaitTimeoutError(SwitchyardError):
    """wait_for_job() ran out of time before the job became final. The job keeps running."""

    def __init__(self, job_id: str, timeout: float, last_job: Optional[Dict[str, Any]]) -> None:
        status = last_job.get("status") if last_job else "unknown"
        super().__init__(f"job {job_id} not final after {timeout} s (last status: {status})")
        self.job_id = job_id
        self.last_job = last_job


class UnexpectedResponseError(SwitchyardError):
    """A 2xx answer whose body is not what the API promises (e.g. a proxy's page)."""

    def __init__(self, status: int, what: str) -> None:
        super().__init__(f"unexpected {status} answer: {what}")
        self.status = status
