"""list_jobs / iter_jobs / cancel_job of the Python client against the real hub (issue 16)."""

from __future__ import annotations

import time
import unittest
from typing import Any, List

from hub import hub

from switchyard_sdk import ConflictError, InvalidRequestError, NotFoundError, SwitchyardClient


def client(name: str = "acme") -> SwitchyardClient:
    h = hub()
    return SwitchyardClient(h["base_url"], h["clients"][name]["token"])


def eventually(probe: Any, what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class ListJobsTest(unittest.TestCase):
    def test_own_jobs_newest_first_paged(self) -> None:
        acme = client()
        created = [
            acme.run(request_id=f"py-list-{i}", route="demo.echo", input="x").job["job_id"]
            for i in range(5)
        ]
        other = client("globex").run(request_id="py-list-g", route="demo.echo", input="x")

        def listed() -> List[Any]:
            jobs = list(acme.iter_jobs(route="demo.echo", limit=2))
            ids = {j["job_id"] for j in jobs}
            return jobs if all(c in ids for c in created) else []

        jobs = eventually(listed, "the index to list the jobs")
        ids = [j["job_id"] for j in jobs]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertNotIn(other.job["job_id"], ids)
        times = [j["created_at"] for j in jobs]
        self.assertEqual(times, sorted(times, reverse=True))
        page = acme.list_jobs(status=["done"], limit=1)
        self.assertEqual(len(page.jobs), 1)
        self.assertIsNotNone(page.next_cursor)

    def test_bad_cursor_is_invalid_request(self) -> None:
        with self.assertRaises(InvalidRequestError):
            client().list_jobs(cursor="not-a-cursor")


class CancelJobTest(unittest.TestCase):
    def test_cancelling_then_cancelled_then_final(self) -> None:
        acme = client()
        job = acme.run(request_id="py-cancel", route="demo.slow", input="x").job
        first = acme.cancel_job(job["job_id"])
        self.assertEqual(first.state, "cancelling")
        self.assertEqual(first.job["error"]["code"], "cancelled")
        self.assertEqual(first.job["error"]["cancelled_by"], {"kind": "client", "id": "acme"})
        self.assertEqual(acme.cancel_job(job["job_id"]).state, "cancelled")
        with self.assertRaises(NotFoundError):
            client("globex").cancel_job(job["job_id"])
        done = acme.run(request_id="py-cancel-done", route="demo.echo", input="x").job
        acme.wait_for_job(done["job_id"], timeout=10)
        with self.assertRaises(ConflictError) as raised:
            acme.cancel_job(done["job_id"])
        self.assertEqual(raised.exception.code, "job_final")


if __name__ == "__main__":
    unittest.main()
