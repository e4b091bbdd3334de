"""Unit tests of the pure logic of GET /jobs and POST /jobs/{job_id}/cancel (the request built,
the answers read); test_list_cancel_hub.py makes the same calls against the real hub."""

from __future__ import annotations

import datetime
import unittest
import urllib.parse
from typing import Any, Dict, List

import hub  # noqa: F401 - puts sdk/python/src on sys.path

from switchyard_sdk import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    UnexpectedResponseError,
    api_error_from,
    list_jobs_path,
)
from switchyard_sdk._client import _paginate, job_path, parse_cancel, parse_job_page
from switchyard_sdk._types import JobPage


def job(n: int, status: str = "done") -> Dict[str, Any]:
    return {
        "job_id": f"job_{n:022d}",
        "request_id": f"r{n}",
        "route": "demo.echo",
        "status": status,
        "created_at": "2026-01-31T12:00:00Z",
        "updated_at": "2026-01-31T12:00:00Z",
    }


class ListPathTest(unittest.TestCase):
    def test_no_filters(self) -> None:
        self.assertEqual(list_jobs_path(), "/jobs")

    def test_repeated_filters_times_limit_cursor(self) -> None:
        path = list_jobs_path(
            status=["error", "rejected"],
            route=("billing.invoice", "demo.*"),
            created_after=datetime.datetime(2026, 1, 31, 12, tzinfo=datetime.timezone.utc),
            created_before="2026-02-01T00:00:00+01:00",
            limit=500,
            cursor="c/1+=",
        )
        url = urllib.parse.urlsplit(path)
        query = urllib.parse.parse_qs(url.query)
        self.assertEqual(url.path, "/jobs")
        self.assertEqual(query["status"], ["error", "rejected"])
        self.assertEqual(query["route"], ["billing.invoice", "demo.*"])
        self.assertEqual(query["created_after"], ["2026-01-31T12:00:00+00:00"])
        self.assertEqual(query["created_before"], ["2026-02-01T00:00:00+01:00"])
        self.assertEqual((query["limit"], query["cursor"]), (["500"], ["c/1+="]))

    def test_the_same_query_as_the_typescript_sdk(self) -> None:
        self.assertEqual(
            list_jobs_path(status="running", route="demo.echo", limit=1),
            "/jobs?status=running&route=demo.echo&limit=1",
        )

    def test_refused_before_sending(self) -> None:
        bad: List[Dict[str, Any]] = [
            {"status": "cancelled"},
            {"route": ""},
            {"limit": 0},
            {"limit": 501},
            {"limit": True},
            {"created_after": "2026-01-31T12:00:00"},
            {"created_before": datetime.datetime(2026, 1, 31)},
            {"cursor": ""},
        ]
        for params in bad:
            with self.subTest(params=params), self.assertRaises(ValueError):
                list_jobs_path(**params)


class AnswersTest(unittest.TestCase):
    def test_pages(self) -> None:
        page = parse_job_page(200, {"jobs": [job(1)], "next_cursor": "abc", "total": 3})
        self.assertEqual((len(page.jobs), page.next_cursor), (1, "abc"))
        self.assertIsNone(parse_job_page(200, {"jobs": [], "next_cursor": None}).next_cursor)
        for bad in (None, "<html>", {"jobs": "x"}, {"jobs": [{}]}, {"jobs": [], "next_cursor": 3}):
            with self.subTest(bad=bad), self.assertRaises(UnexpectedResponseError):
                parse_job_page(200, bad)

    def test_cancel_answers(self) -> None:
        self.assertEqual(parse_cancel(202, job(1, "running")).state, "cancelling")
        cancelled = dict(job(1, "error"), error={"code": "cancelled", "message": "by acme"})
        result = parse_cancel(200, cancelled)
        self.assertEqual((result.state, result.job["error"]["code"]), ("cancelled", "cancelled"))
        with self.assertRaises(UnexpectedResponseError):
            parse_cancel(204, None)
        self.assertEqual(job_path("job_a/b?c", "/cancel"), "/jobs/job_a%2Fb%3Fc/cancel")

    def test_error_mapping(self) -> None:
        final = api_error_from(409, {"code": "job_final", "title": "Job is final", "detail": "done"})
        self.assertIsInstance(final, ConflictError)
        self.assertEqual((final.code, final.retryable), ("job_final", False))
        missing = api_error_from(404, {"code": "job_not_found", "title": "Job not found"})
        self.assertIsInstance(missing, NotFoundError)
        bad = api_error_from(
            400,
            {"code": "invalid_request", "errors": [{"pointer": "/limit", "message": "too big"}]},
        )
        self.assertIsInstance(bad, InvalidRequestError)
        self.assertEqual(bad.errors[0]["pointer"], "/limit")
        gateway = api_error_from(502, None, "Bad Gateway")
        self.assertEqual((gateway.code, gateway.title, gateway.retryable), ("http_502", "Bad Gateway", True))


class PagingTest(unittest.TestCase):
    def test_follows_the_cursor_keeping_filters(self) -> None:
        pages = {
            None: JobPage([job(1), job(2)], "c2"),
            "c2": JobPage([job(3)], "c3"),
            "c3": JobPage([], None),
        }
        asked: List[Dict[str, Any]] = []

        def read(filters: Dict[str, Any]) -> JobPage:
            asked.append(filters)
            return pages[filters.get("cursor")]

        ids = [j["request_id"] for j in _paginate({"status": "done", "limit": 2}, read)]
        self.assertEqual(ids, ["r1", "r2", "r3"])
        self.assertEqual(
            asked,
            [
                {"status": "done", "limit": 2},
                {"status": "done", "limit": 2, "cursor": "c2"},
                {"status": "done", "limit": 2, "cursor": "c3"},
            ],
        )

    def test_reads_lazily_and_refuses_a_repeating_cursor(self) -> None:
        reads: List[int] = []

        def endless(_filters: Dict[str, Any]) -> JobPage:
            reads.append(1)
            return JobPage([job(len(reads))], f"c{len(reads)}")

        next(_paginate({}, endless))
        self.assertEqual(len(reads), 1)
        with self.assertRaises(UnexpectedResponseError):
            list(_paginate({"cursor": "same"}, lambda _f: JobPage([job(1)], "same")))


if __name__ == "__main__":
    unittest.main()
