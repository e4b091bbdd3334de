"""One API call with bounded retries over urllib; the body is encoded once, so retries resend it."""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, NamedTuple, Optional

from ._errors import NetworkError, api_error_from

_RETRYABLE = frozenset({429, 500, 502, 503, 504})


class Settings(NamedTuple):
    base_url: str
    token: str
    timeout: float
    max_attempts: int
    base_delay: float
    max_delay: float
    max_retry_after: float
    sleep: Callable[[float], None]
    clock: Callable[[], float]
    random: Callable[[], float]
    opener: urllib.request.OpenerDirector


class Answer(NamedTuple):
    status: int
    headers: Any
    body: Any


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is an error, never followed: a redirect could carry the token to another host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def default_opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(_NoRedirect())


def backoff_delay(attempt: int, base: float, cap: float, rand: Callable[[], float]) -> float:
    """Capped exponential backoff with equal jitter: attempt 1 waits base/2..base, doubling to cap."""
    ceiling = min(cap, base * 2 ** max(0, attempt - 1))
    return ceiling / 2 + rand() * ceiling / 2


def parse_retry_after(value: Optional[str], now: float) -> Optional[int]:
    """Retry-After as whole seconds from now (delay-seconds or an HTTP-date), None if absent/bad."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        at = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if at is None or at.tzinfo is None:
        return None
    return max(0, int(-(-(at.timestamp() - now) // 1)))


def _read_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _attempt(settings: Settings, request: urllib.request.Request) -> Answer:
    """One attempt: an Answer for any HTTP status; raises socket/URL errors for no answer."""
    try:
        with settings.opener.open(request, timeout=settings.timeout) as response:
            return Answer(response.status, response.headers, _read_json(response.read()))
    except urllib.error.HTTPError as err:
        try:
            return Answer(err.code, err.headers, _read_json(err.read()))
        finally:
            err.close()


def _failure_kind(err: BaseException) -> str:
    reason = getattr(err, "reason", err)
    return "timeout" if isinstance(reason, (socket.timeout, TimeoutError)) else "network"


def call(
    settings: Settings,
    method: str,
    path: str,
    payload: Any = None,
    *,
    max_attempts: Optional[int] = None,
    request_id: Optional[str] = None,
) -> Answer:
    """Sends one call, retrying timeouts, network errors, 429 and 5xx (max of backoff and
    Retry-After). Raises the typed ApiError, or NetworkError when no attempt got an answer."""
    attempts = max_attempts if max_attempts is not None else settings.max_attempts
    data = None if payload is None else json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers: Dict[str, str] = {
        "Authorization": f"Bearer {settings.token}",
        "Accept": "application/json, application/problem+json",
    }
    if data is not None:
        headers["Content-Type"] = "application/json"
    url = settings.base_url.rstrip("/") + path
    for attempt in range(1, attempts + 1):
        more = attempt < attempts
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            answer = _attempt(settings, request)
        except (OSError, http.client.HTTPException) as err:
            # URLError (refused, DNS), socket timeouts and dropped connections are all OSError;
            # a connection cut mid-answer is an HTTPException (IncompleteRead, BadStatusLine).
            if not more:
                raise NetworkError(_failure_kind(err), attempt, request_id) from err
            settings.sleep(
                backoff_delay(attempt, settings.base_delay, settings.max_delay, settings.random)
            )
            continue
        if 200 <= answer.status < 300:
            return answer
        retry_after = parse_retry_after(answer.headers.get("Retry-After"), settings.clock())
        error = api_error_from(answer.status, answer.body, "", retry_after)
        wait = float(retry_after or 0)
        if not more or answer.status not in _RETRYABLE or wait > settings.max_retry_after:
            raise error
        backoff = backoff_delay(attempt, settings.base_delay, settings.max_delay, settings.random)
        settings.sleep(max(backoff, wait))
    raise AssertionError("unreachable: the last attempt returns or raises")


def make_settings(
    base_url: str,
    token: str,
    *,
    timeout: float,
    max_attempts: int,
    base_delay: float,
    max_delay: float,
    max_retry_after: float,
    sleep: Optional[Callable[[float], None]],
    clock: Optional[Callable[[], float]],
    opener: Optional[urllib.request.OpenerDirector],
) -> Settings:
    if not base_url:
        raise ValueError("base_url is required")
    if not token:
        raise ValueError("token is required")
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    return Settings(
        base_url=base_url,
        token=token,
        timeout=timeout,
        max_attempts=max_attempts,
        base_delay=base_delay,
        max_delay=max_delay,
        max_retry_after=max_retry_after,
        sleep=sleep or time.sleep,
        clock=clock or time.time,
        random=random.random,
        opener=opener or default_opener(),
    )
