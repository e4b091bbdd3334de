"""verify_callback: the checks one by one, and a real callback signed and delivered by the hub."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import os
import queue
import threading
import unittest
from typing import Any, Dict, Tuple

from hub import hub

from switchyard_sdk import (
    SwitchyardClient,
    WebhookVerificationError,
    new_request_id,
    verify_callback,
    verify_webhook,
)

T = 1_760_000_000


def new_secret(size: int = 32) -> str:
    return "whsec_" + base64.b64encode(os.urandom(size)).decode()


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """An independent signer, straight from the Standard Webhooks description."""
    key = base64.b64decode(secret[len("whsec_") :])
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


SECRET = new_secret()
EVENT = {"type": "job.completed", "timestamp": "2025-10-09T08:00:05Z", "data": {"job_id": "job_1"}}
BODY = json.dumps(EVENT).encode()
HEADERS = {
    "webhook-id": "msg_1",
    "webhook-timestamp": str(T),
    "webhook-signature": sign(SECRET, "msg_1", T, BODY),
}


def at(seconds: float) -> Any:
    return lambda: seconds


def code_of(call: Any) -> str:
    try:
        call()
    except WebhookVerificationError as err:
        return err.code
    return "verified"


class VerifyTest(unittest.TestCase):
    def test_valid_callback_bytes_or_text_any_header_case(self) -> None:
        self.assertEqual(verify_callback(BODY, HEADERS, [SECRET], now=at(T)), EVENT)
        upper = {k.title(): v for k, v in HEADERS.items()}
        self.assertEqual(verify_callback(BODY.decode(), upper, [SECRET], now=at(T)), EVENT)
        self.assertEqual(verify_webhook(BODY, HEADERS, [SECRET], now=at(T)), ("msg_1", T))

    def test_rotation_any_given_secret_may_match(self) -> None:
        self.assertEqual(code_of(lambda: verify_callback(BODY, HEADERS, [new_secret(), SECRET], now=at(T))), "verified")

    def test_each_failed_check_has_its_code(self) -> None:
        no_sig = {k: v for k, v in HEADERS.items() if k != "webhook-signature"}
        cases: Dict[str, Tuple[Any, ...]] = {
            "missing_header": (BODY, no_sig, [SECRET], T),
            "invalid_timestamp": (BODY, {**HEADERS, "webhook-timestamp": "soon"}, [SECRET], T),
            "timestamp_too_old": (BODY, HEADERS, [SECRET], T + 301),
            "timestamp_too_new": (BODY, HEADERS, [SECRET], T - 301),
            "no_matching_signature": (BODY + b"\n", HEADERS, [SECRET], T),
            "invalid_secret": (BODY, HEADERS, ["not-a-secret"], T),
        }
        for code, (body, headers, secrets, now) in cases.items():
            with self.subTest(code):
                self.assertEqual(code_of(lambda: verify_callback(body, headers, secrets, now=at(now))), code)
        self.assertEqual(code_of(lambda: verify_callback(BODY, HEADERS, [new_secret()], now=at(T))), "no_matching_signature")
        self.assertEqual(code_of(lambda: verify_callback(BODY, HEADERS, ["whsec_c2hvcnQ="], now=at(T))), "invalid_secret")
        self.assertEqual(code_of(lambda: verify_callback(BODY, HEADERS, [], now=at(T))), "invalid_secret")
        self.assertEqual(code_of(lambda: verify_callback(BODY, HEADERS, SECRET, now=at(T))), "invalid_secret")

    def test_narrower_tolerance(self) -> None:
        self.assertEqual(
            code_of(lambda: verify_callback(BODY, HEADERS, [SECRET], tolerance=30, now=at(T + 31))),
            "timestamp_too_old",
        )

    def test_signed_body_that_is_not_json(self) -> None:
        body = b"not json"
        headers = {**HEADERS, "webhook-signature": sign(SECRET, "msg_1", T, body)}
        self.assertEqual(code_of(lambda: verify_callback(body, headers, [SECRET], now=at(T))), "invalid_body")


class HubCallbackTest(unittest.TestCase):
    """The hub signs with both of acme's secrets (a rotation in progress)."""

    def test_real_callback_verifies_with_either_secret(self) -> None:
        received: "queue.Queue[Tuple[bytes, Any]]" = queue.Queue()

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(204)
                self.end_headers()
                received.put((body, self.headers))

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            acme = hub()["clients"]["acme"]
            client = SwitchyardClient(hub()["base_url"], acme["token"])
            url = f"http://127.0.0.1:{server.server_address[1]}/hook"
            job = client.run(
                request_id=new_request_id(), route="demo.echo", input="ping", callback_url=url
            ).job
            body, headers = received.get(timeout=20)
        finally:
            server.shutdown()
            server.server_close()
        old, new = acme["secrets"]
        for accepted in ([old], [new], [new_secret(), new]):
            event = verify_callback(body, headers, accepted)
            self.assertEqual(event["type"], "job.completed")
            self.assertEqual(event["data"]["job_id"], job["job_id"])
            self.assertEqual(event["data"]["output"], "ping")
        self.assertEqual(code_of(lambda: verify_callback(body, headers, [new_secret()])), "no_matching_signature")
        sent = int(headers["webhook-timestamp"])
        late = at(sent + 301)
        self.assertEqual(code_of(lambda: verify_callback(body, headers, [old], now=late)), "timestamp_too_old")


if __name__ == "__main__":
    unittest.main()
