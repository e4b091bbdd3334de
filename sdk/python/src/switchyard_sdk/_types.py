"""Records of the Client API v1, as typed dictionaries (the hub may add members: ignore unknown ones)."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict

JobStatus = Literal["queued", "dispatched", "running", "done", "error", "rejected"]
FinalJobStatus = Literal["done", "error", "rejected"]

JOB_STATUSES = ("queued", "dispatched", "running", "done", "error", "rejected")
FINAL_STATUSES = frozenset({"done", "error", "rejected"})


def is_final_status(status: str) -> bool:
    """True for done, error and rejected: nothing moves a job out of these."""
    return status in FINAL_STATUSES


class _JobErrorRequired(TypedDict):
    code: str
    message: str


class JobError(_JobErrorRequired, total=False):
    """A job's error; `cancelled_by` ({"kind": "client" | "operator", "id": ...}) on a cancel."""

    cancelled_by: Dict[str, str]


class _CallbackStateRequired(TypedDict):
    status: Literal["pending", "delivered", "failed"]
    attempts: int


class CallbackState(_CallbackStateRequired, total=False):
    last_attempt_at: str
    next_attempt_at: str


class _JobRequired(TypedDict):
    job_id: str
    request_id: str
    route: str
    status: JobStatus
    created_at: str
    updated_at: str


class Job(_JobRequired, total=False):
    """The job record of GET /jobs/{job_id}, both answers of POST /run, GET /jobs and cancel."""

    completed_at: str
    output: Any
    error: JobError
    callback: CallbackState
    retry_of: str
    retried_as: str


class JobCompletedData(TypedDict, total=False):
    job_id: str
    request_id: str
    route: str
    status: FinalJobStatus
    output: Any
    error: JobError
    created_at: str
    completed_at: str
    truncated: bool


class JobCompletedEvent(TypedDict):
    """Body of a completion callback."""

    type: str
    timestamp: str
    data: JobCompletedData


class RunResult:
    """Result of run(): `created` is True for a new job (202), False for a known request_id (200)."""

    __slots__ = ("created", "job", "location")

    def __init__(self, created: bool, job: Job, location: Optional[str]) -> None:
        self.created = created
        self.job = job
        self.location = location

    def __repr__(self) -> str:
        return f"RunResult(created={self.created!r}, job_id={self.job.get('job_id')!r})"


class JobPage:
    """One page of GET /jobs, newest first; pass `next_cursor` as `cursor` for the next one."""

    __slots__ = ("jobs", "next_cursor")

    def __init__(self, jobs: List[Job], next_cursor: Optional[str]) -> None:
        self.jobs = jobs
        self.next_cursor = next_cursor

    def __repr__(self) -> str:
        return f"JobPage(jobs={len(self.jobs)}, next_cursor={self.next_cursor!r})"


class CancelResult:
    """`cancelling` (202) while the hub carries the cancel out, `cancelled` (200) if it already was."""

    __slots__ = ("state", "job")

    def __init__(self, state: Literal["cancelling", "cancelled"], job: Job) -> None:
        self.state = state
        self.job = job

    def __repr__(self) -> str:
        return f"CancelResult(state={self.state!r}, job_id={self.job.get('job_id')!r})"


Metadata = Dict[str, Any]
