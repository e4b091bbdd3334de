"""Switchyard SDK for Python: a client of the hub's Client API v1 (submit runs, read, list, cancel
and wait for jobs) and verification of signed completion callbacks. Standard library only.

    from switchyard_sdk import SwitchyardClient, new_request_id

    client = SwitchyardClient("https://switchyard.example.com", token)
    result = client.run(request_id=new_request_id(), route="support.summarise", input="...")
    job = client.wait_for_job(result.job["job_id"], timeout=120)
"""

from ._client import (
    LIST_LIMIT_MAX,
    LIST_LIMIT_MIN,
    SwitchyardClient,
    list_jobs_path,
    new_request_id,
)
from ._errors import (
    PROBLEM_CODES,
    ApiError,
    AuthenticationError,
    ConflictError,
    InvalidRequestError,
    NetworkError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    SwitchyardError,
    UnexpectedResponseError,
    WaitTimeoutError,
    api_error_from,
)
from ._types import (
    FINAL_STATUSES,
    JOB_STATUSES,
    CallbackState,
    CancelResult,
    Job,
    JobCompletedData,
    JobCompletedEvent,
    JobError,
    JobPage,
    RunResult,
    is_final_status,
)
from ._webhooks import (
    VERIFICATION_CODES,
    VerifiedWebhook,
    WebhookVerificationError,
    verify_callback,
    verify_webhook,
)

__version__ = "0.2.0"

__all__ = [
    "FINAL_STATUSES",
    "JOB_STATUSES",
    "LIST_LIMIT_MAX",
    "LIST_LIMIT_MIN",
    "PROBLEM_CODES",
    "VERIFICATION_CODES",
    "ApiError",
    "AuthenticationError",
    "CallbackState",
    "CancelResult",
    "ConflictError",
    "InvalidRequestError",
    "Job",
    "JobCompletedData",
    "JobCompletedEvent",
    "JobError",
    "JobPage",
    "NetworkError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "RunResult",
    "ServerError",
    "SwitchyardClient",
    "SwitchyardError",
    "UnexpectedResponseError",
    "VerifiedWebhook",
    "WaitTimeoutError",
    "WebhookVerificationError",
    "api_error_from",
    "is_final_status",
    "list_jobs_path",
    "new_request_id",
    "verify_callback",
    "verify_webhook",
]
