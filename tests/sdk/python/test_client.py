"""The Python client against a real hub: run, idempotent retries, typed errors, get, wait."""

from __future__ import annotations

import http.server
import socket
import threading
import time
import unittest
from typing import Any, List

from hub import add_fault, hub, seen

from switchyard_sdk import (
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
    SwitchyardClient,
    WaitTimeoutError,
    new_request_id,
)

UNKNOWN_JOB = "job_AAAAAAAAAAAAAAAAAAAAAA"


class RecordingSleep:
    """Real time; every sleep the client asks for is recorded."""

    def __init__(self) -> None:
        self.sleeps: List[float] = []

    def __call__(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        time.sleep(seconds)


def client(name: str = "acme", proxied: bool = False, **options: Any) -> SwitchyardClient:
    h = hub()
    options.setdefault("base_delay", 0.01)
    options.setdefault("max_delay", 0.04)
    base_url = h["proxy_url"] if proxied else h["base_url"]
    return SwitchyardClient(base_url, h["clients"][name]["token"], **options)


def raised(call: Any) -> BaseException:
    try:
        call()
    except BaseException as err:  # noqa: BLE001 - the test inspects whatever was raised
        return err
    raise AssertionError("expected an exception")


class RunTest(unittest.TestCase):
    def test_new_then_known_request(self) -> None:
        c = client()
        request_id = new_request_id()
        first = c.run(request_id=request_id, route="demo.echo", input="hi", metadata={"k": 1})
        self.assertTrue(first.created)
        self.assertEqual(first.job["request_id"], request_id)
        self.assertEqual(first.location, f"/jobs/{first.job['job_id']}")
        again = c.run(request_id=request_id, route="demo.echo", input="hi", metadata={"k": 1})
        self.assertFalse(again.created)
        self.assertEqual(again.job["job_id"], first.job["job_id"])

    def test_lost_answer_is_retried_with_the_same_bytes(self) -> None:
        request_id = new_request_id()
        add_fault({"method": "POST", "requestId": request_id, "action": "hold"})
        result = client(proxied=True, timeout=0.5).run(
            request_id=request_id, route="demo.echo", input="x"
        )
        bodies = [s["body"] for s in seen(request_id)]
        self.assertEqual(len(bodies), 2)
        self.assertEqual(bodies[0], bodies[1])
        self.assertFalse(result.created)  # the hub had stored the first attempt

    def test_503_retry_after_is_waited_out(self) -> None:
        request_id = new_request_id()
        add_fault(
            {
                "method": "POST",
                "requestId": request_id,
                "action": "status",
                "status": 503,
                "retryAfter": 1,
            }
        )
        sleep = RecordingSleep()
        result = client(proxied=True, sleep=sleep).run(
            request_id=request_id, route="demo.echo", input="x"
        )
        self.assertTrue(result.created)
        self.assertEqual(len(sleep.sleeps), 1)
        self.assertGreaterEqual(sleep.sleeps[0], 1.0)
        self.assertEqual(len({s["body"] for s in seen(request_id)}), 1)

    def test_real_429_with_long_retry_after_is_raised(self) -> None:
        c = client("limited", max_retry_after=1)
        c.run(request_id=new_request_id(), route="demo.echo", input="x")
        err = raised(lambda: c.run(request_id=new_request_id(), route="demo.echo", input="x"))
        self.assertIsInstance(err, RateLimitError)
        self.assertEqual(err.code, "rate_limited")
        self.assertTrue(err.retryable)
        self.assertGreater(err.retry_after or 0, 1)

    def test_no_answer_is_a_network_error_naming_the_request_id(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        sleep = RecordingSleep()
        c = SwitchyardClient(
            f"http://127.0.0.1:{port}", "t", max_attempts=3, base_delay=0.02, max_delay=0.03, sleep=sleep
        )
        err = raised(lambda: c.run(request_id="r-offline", route="demo.echo", input="x"))
        self.assertIsInstance(err, NetworkError)
        self.assertEqual((err.kind, err.attempts, err.request_id), ("network", 3, "r-offline"))
        self.assertIn('same request_id "r-offline"', str(err))
        self.assertEqual(len(sleep.sleeps), 2)
        self.assertTrue(all(s <= 0.03 for s in sleep.sleeps))

    def test_a_request_id_is_never_invented(self) -> None:
        c = SwitchyardClient("http://127.0.0.1:9", "t")
        with self.assertRaisesRegex(ValueError, "needs a request_id"):
            c.run(request_id="  ", route="demo.echo", input="x")
        self.assertNotEqual(new_request_id(), new_request_id())


class ErrorsTest(unittest.TestCase):
    def test_codes_match_the_hub(self) -> None:
        for code, status in hub()["problem_codes"].items():
            self.assertEqual((code, PROBLEM_CODES.get(code)), (code, status))
        extra = set(PROBLEM_CODES) - set(hub()["problem_codes"]) - {"job_final"}
        self.assertEqual(extra, set())

    def test_invalid_metadata_is_invalid_request_with_a_pointer(self) -> None:
        err = raised(
            lambda: client().run(
                request_id=new_request_id(),
                route="demo.echo",
                input="x",
                metadata={"principal": {"id": ""}},
            )
        )
        self.assertIsInstance(err, InvalidRequestError)
        self.assertEqual((err.status, err.code, err.retryable), (400, "invalid_request", False))
        self.assertTrue(any(e["pointer"].startswith("/metadata/principal") for e in err.errors))

    def test_request_id_conflict(self) -> None:
        c = client()
        request_id = new_request_id()
        c.run(request_id=request_id, route="demo.echo", input="a")
        err = raised(lambda: c.run(request_id=request_id, route="demo.echo", input="b"))
        self.assertIsInstance(err, ConflictError)
        self.assertEqual(err.code, "request_id_conflict")

    def test_route_not_allowed_unauthorized_and_not_found(self) -> None:
        denied = raised(
            lambda: client().run(request_id=new_request_id(), route="billing.invoice", input="x")
        )
        self.assertIsInstance(denied, PermissionDeniedError)
        self.assertEqual(denied.code, "route_not_allowed")
        bad_token = SwitchyardClient(hub()["base_url"], "wrong-token")
        unauthorized = raised(lambda: bad_token.get_job(UNKNOWN_JOB))
        self.assertIsInstance(unauthorized, AuthenticationError)
        self.assertEqual(unauthorized.code, "unauthorized")
        missing = raised(lambda: client().get_job(UNKNOWN_JOB))
        self.assertIsInstance(missing, NotFoundError)
        self.assertEqual((missing.status, missing.code), (404, "job_not_found"))

    def test_another_clients_job_is_not_found(self) -> None:
        job = client().run(request_id=new_request_id(), route="demo.echo", input="x").job
        err = raised(lambda: client("globex").get_job(job["job_id"]))
        self.assertIsInstance(err, NotFoundError)

    def test_a_persistent_503_is_a_server_error(self) -> None:
        request_id = new_request_id()
        add_fault(
            {
                "method": "POST",
                "requestId": request_id,
                "action": "status",
                "status": 503,
                "retryAfter": 0,
                "times": 2,
            }
        )
        c = client(proxied=True, max_attempts=2, base_delay=0.001)
        err = raised(lambda: c.run(request_id=request_id, route="demo.echo", input="x"))
        self.assertIsInstance(err, ServerError)
        self.assertIsInstance(err, ApiError)
        self.assertEqual((err.code, err.retry_after), ("unavailable", 0))


class RedirectTest(unittest.TestCase):
    def test_a_redirect_is_not_followed(self) -> None:
        hits: List[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                hits.append(self.path)
                self.send_response(302)
                self.send_header("Location", "/elsewhere")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            c = SwitchyardClient(f"http://127.0.0.1:{server.server_address[1]}", "t")
            err = raised(lambda: c.get_job("job_x"))
            self.assertIsInstance(err, ApiError)
            self.assertEqual((err.status, err.code), (302, "http_302"))
            self.assertEqual(hits, ["/jobs/job_x"])
        finally:
            server.shutdown()
            server.server_close()


class WaitTest(unittest.TestCase):
    def test_returns_the_final_record_with_doubling_capped_intervals(self) -> None:
        sleep = RecordingSleep()
        c = client(sleep=sleep)
        job = c.run(request_id=new_request_id(), route="demo.sleep", input="hello").job
        self.assertEqual(c.get_job(job["job_id"])["job_id"], job["job_id"])
        done = c.wait_for_job(job["job_id"], initial_interval=0.02, max_interval=0.08)
        self.assertEqual((done["status"], done["output"]), ("done", "hello"))
        self.assertIn("completed_at", done)
        self.assertGreaterEqual(len(sleep.sleeps), 3)
        expected = [min(0.08, 0.02 * 2**i) for i in range(len(sleep.sleeps))]
        self.assertEqual(sleep.sleeps, expected)

    def test_honours_retry_after_while_polling(self) -> None:
        sleep = RecordingSleep()
        c = client(proxied=True, sleep=sleep)
        job = c.run(request_id=new_request_id(), route="demo.echo", input="x").job
        path = f"/jobs/{job['job_id']}"
        add_fault({"method": "GET", "path": path, "action": "status", "status": 429, "retryAfter": 1})
        self.assertEqual(c.wait_for_job(job["job_id"], initial_interval=0.01)["status"], "done")
        self.assertEqual(sleep.sleeps[0], 1.0)

    def test_gives_up_after_timeout_with_the_last_status(self) -> None:
        c = client()
        job = c.run(request_id=new_request_id(), route="demo.slow", input="x").job
        err = raised(
            lambda: c.wait_for_job(
                job["job_id"], timeout=0.3, initial_interval=0.02, max_interval=0.05
            )
        )
        self.assertIsInstance(err, WaitTimeoutError)
        self.assertIn(err.last_job["status"], ("queued", "dispatched", "running"))

    def test_a_404_ends_waiting_at_once(self) -> None:
        sleep = RecordingSleep()
        err = raised(lambda: client(sleep=sleep).wait_for_job(UNKNOWN_JOB))
        self.assertIsInstance(err, NotFoundError)
        self.assertEqual(sleep.sleeps, [])


if __name__ == "__main__":
    unittest.main()
