"""The client of Client API v1: run, get, list, cancel and wait for jobs."""

from __future__ import annotations

import datetime
import re
import urllib.parse
import urllib.request
import uuid
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, Union, cast

from . import _http
from ._errors import ApiError, NetworkError, UnexpectedResponseError, WaitTimeoutError
from ._types import (
    JOB_STATUSES,
    CancelResult,
    Job,
    JobPage,
    Metadata,
    RunResult,
    is_final_status,
)

LIST_LIMIT_MIN = 1
LIST_LIMIT_MAX = 500
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$", re.I)

TimeArg = Union[datetime.datetime, str, None]
Many = Union[str, Sequence[str], None]


def new_request_id() -> str:
    """A fresh request_id. Make it once per unit of work and store it with that work."""
    return str(uuid.uuid4())


def job_path(job_id: str, suffix: str = "") -> str:
    if not isinstance(job_id, str) or not job_id:
        raise ValueError("job_id is required")
    return f"/jobs/{urllib.parse.quote(job_id, safe='')}{suffix}"


def _many(name: str, value: Many) -> List[str]:
    values = [] if value is None else [value] if isinstance(value, str) else list(value)
    for v in values:
        if not isinstance(v, str) or not v:
            raise ValueError(f"{name} values must be non-empty strings")
    return values


def _rfc3339(name: str, value: TimeArg) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ValueError(f"{name} needs a timezone-aware datetime")
        return value.isoformat()
    if not _RFC3339.match(value):
        raise ValueError(f"{name} must be a datetime or an RFC 3339 time such as 2026-01-31T12:00:00Z")
    return value


def list_jobs_path(
    *,
    status: Many = None,
    route: Many = None,
    created_after: TimeArg = None,
    created_before: TimeArg = None,
    limit: Optional[int] = None,
    cursor: Optional[str] = None,
) -> str:
    """Path and query of GET /jobs: status and route repeat, times are RFC 3339. Raises ValueError
    for values the hub would refuse, before anything is sent."""
    query: List[Tuple[str, str]] = []
    for s in _many("status", status):
        if s not in JOB_STATUSES:
            raise ValueError(f'status "{s}" is not a job status')
        query.append(("status", s))
    query.extend(("route", r) for r in _many("route", route))
    for name, value in (("created_after", created_after), ("created_before", created_before)):
        text = _rfc3339(name, value)
        if text is not None:
            query.append((name, text))
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ValueError("limit must be an integer")
        if not LIST_LIMIT_MIN <= limit <= LIST_LIMIT_MAX:
            raise ValueError(f"limit must be from {LIST_LIMIT_MIN} to {LIST_LIMIT_MAX}")
        query.append(("limit", str(limit)))
    if cursor is not None:
        if not cursor:
            raise ValueError("cursor must be non-empty when given")
        query.append(("cursor", cursor))
    return "/jobs" + ("?" + urllib.parse.urlencode(query) if query else "")


def parse_job(status: int, body: Any) -> Job:
    if not isinstance(body, dict) or not isinstance(body.get("job_id"), str):
        raise UnexpectedResponseError(status, "the body is not a job record")
    return cast(Job, body)


def parse_job_page(status: int, body: Any) -> JobPage:
    jobs = body.get("jobs") if isinstance(body, dict) else None
    if not isinstance(jobs, list):
        raise UnexpectedResponseError(status, "the body is not a page of jobs")
    cursor = body.get("next_cursor")
    if cursor is not None and (not isinstance(cursor, str) or not cursor):
        raise UnexpectedResponseError(status, "next_cursor is neither a string nor null")
    return JobPage([parse_job(status, j) for j in jobs], cursor)


def parse_cancel(status: int, body: Any) -> CancelResult:
    if status not in (200, 202):
        raise UnexpectedResponseError(status, "cancel answers 200 or 202")
    return CancelResult("cancelling" if status == 202 else "cancelled", parse_job(status, body))


class SwitchyardClient:
    """A client of one hub with one client token. Every call retries timeouts, network errors,
    429 and 5xx a bounded number of times, resending the very same request."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        max_attempts: int = 4,
        base_delay: float = 0.25,
        max_delay: float = 8.0,
        max_retry_after: float = 60.0,
        sleep: Optional[Callable[[float], None]] = None,
        clock: Optional[Callable[[], float]] = None,
        opener: Optional[urllib.request.OpenerDirector] = None,
    ) -> None:
        """`timeout` is per attempt in seconds; `sleep` and `clock` default to real time (inject
        them to test code that waits); `opener` is a urllib opener that must not follow redirects."""
        self._settings = _http.make_settings(
            base_url,
            token,
            timeout=timeout,
            max_attempts=max_attempts,
            base_delay=base_delay,
            max_delay=max_delay,
            max_retry_after=max_retry_after,
            sleep=sleep,
            clock=clock,
            opener=opener,
        )

    def run(
        self,
        *,
        request_id: str,
        route: str,
        input: str,
        metadata: Optional[Metadata] = None,
        callback_url: Optional[str] = None,
    ) -> RunResult:
        """POST /run. A retry resends the same bytes, so the same request_id: it can never start a
        second job. Raises ConflictError (request_id_conflict) for a request_id reused with another
        body, NetworkError (naming the request_id) when no attempt got an answer."""
        if not isinstance(request_id, str) or not request_id.strip():
            raise ValueError(
                "run() needs a request_id: pick one per unit of work and keep it for retries"
            )
        if not isinstance(route, str) or not route:
            raise ValueError("run() needs a route")
        if not isinstance(input, str):
            raise ValueError("run() needs input as a string")
        body: dict = {"request_id": request_id, "route": route, "input": input}
        if metadata is not None:
            body["metadata"] = metadata
        if callback_url is not None:
            body["callback_url"] = callback_url
        answer = _http.call(self._settings, "POST", "/run", body, request_id=request_id)
        return RunResult(
            answer.status == 202,
            parse_job(answer.status, answer.body),
            answer.headers.get("Location"),
        )

    def get_job(self, job_id: str) -> Job:
        """GET /jobs/{job_id}; unknown and other clients' jobs raise NotFoundError."""
        answer = _http.call(self._settings, "GET", job_path(job_id))
        return parse_job(answer.status, answer.body)

    def list_jobs(
        self,
        *,
        status: Many = None,
        route: Many = None,
        created_after: TimeArg = None,
        created_before: TimeArg = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> JobPage:
        """One page of this client's jobs (GET /jobs), newest first."""
        path = list_jobs_path(
            status=status,
            route=route,
            created_after=created_after,
            created_before=created_before,
            limit=limit,
            cursor=cursor,
        )
        answer = _http.call(self._settings, "GET", path)
        return parse_job_page(answer.status, answer.body)

    def iter_jobs(self, **filters: Any) -> Iterator[Job]:
        """Every job matching the filters of list_jobs, reading the next page only when needed."""
        list_jobs_path(**filters)  # bad filters fail here, not at the first next()
        return _paginate(filters, lambda f: self.list_jobs(**f))

    def cancel_job(self, job_id: str) -> CancelResult:
        """POST /jobs/{job_id}/cancel. Safe to retry (a second cancel answers `cancelled`); a job
        that ended otherwise raises ConflictError with code `job_final`."""
        answer = _http.call(self._settings, "POST", job_path(job_id, "/cancel"))
        return parse_cancel(answer.status, answer.body)

    def wait_for_job(
        self,
        job_id: str,
        *,
        timeout: float = 300.0,
        initial_interval: float = 0.5,
        max_interval: float = 10.0,
    ) -> Job:
        """Polls until the job is final (done, error, rejected) and returns it; error and rejected
        are returned, not raised. Intervals double up to max_interval; Retry-After stretches them;
        timeouts, network errors, 429 and 5xx are polled through. Raises WaitTimeoutError."""
        settings = self._settings
        path = job_path(job_id)
        deadline = settings.clock() + timeout
        last: Optional[Job] = None
        poll = 0
        while True:
            poll += 1
            hint = 0.0
            try:
                answer = _http.call(settings, "GET", path, max_attempts=1)
                last = parse_job(answer.status, answer.body)
                if is_final_status(last["status"]):
                    return last
                hint = float(
                    _http.parse_retry_after(answer.headers.get("Retry-After"), settings.clock()) or 0
                )
            except NetworkError:
                hint = 0.0
            except ApiError as err:
                if not err.retryable:
                    raise
                hint = float(err.retry_after or 0)
            remaining = deadline - settings.clock()
            if remaining <= 0:
                raise WaitTimeoutError(job_id, timeout, cast(Optional[dict], last))
            step = min(max_interval, initial_interval * 2 ** (poll - 1))
            settings.sleep(min(max(step, hint), remaining))


def _paginate(filters: dict, read_page: Callable[[dict], JobPage]) -> Iterator[Job]:
    cursor = filters.get("cursor")
    while True:
        page = read_page(dict(filters, cursor=cursor) if cursor is not None else filters)
        yield from page.jobs
        if page.next_cursor is None:
            return
        if page.next_cursor == cursor:
            raise UnexpectedResponseError(200, "next_cursor repeats the cursor just sent")
        cursor = page.next_cursor
