"""The real hub the Python tests talk to, started once per test process by tests/sdk/hub-fixture.ts
(a real hub on a private nats-server, with the fault proxy in front), and stopped at exit."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.request
from typing import Any, Dict, Optional

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "sdk", "python", "src"))

_hub: Optional[Dict[str, Any]] = None


def _bun() -> str:
    local = os.path.join(REPO, "node_modules", ".bin", "bun")
    found = local if os.path.exists(local) else shutil.which("bun")
    if not found:
        raise RuntimeError(f"bun is missing ({local}): run `npm ci` at the repository root")
    return found


def hub() -> Dict[str, Any]:
    """{"base_url", "proxy_url", "clients": {name: {"token", "secrets"}}, "problem_codes"}."""
    global _hub
    if _hub is not None:
        return _hub
    proc = subprocess.Popen(
        [_bun(), os.path.join(REPO, "tests", "sdk", "hub-fixture.ts")],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The fixture stops the hub when its stdin closes, also if this process dies.
    atexit.register(_stop, proc)
    stderr: list = []
    threading.Thread(target=lambda: stderr.extend(proc.stderr or []), daemon=True).start()
    line = proc.stdout.readline() if proc.stdout else ""
    if not line:
        proc.wait(timeout=30)
        raise RuntimeError(f"the hub fixture exited {proc.returncode}:\n{''.join(stderr)}")
    _hub = json.loads(line)
    return _hub


def _stop(proc: "subprocess.Popen[str]") -> None:
    if proc.stdin:
        proc.stdin.close()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def add_fault(fault: Dict[str, Any]) -> None:
    """Registers a fault with the proxy in front of the hub (see tests/sdk/fault-proxy.ts)."""
    request = urllib.request.Request(
        hub()["proxy_url"] + "/__proxy/faults",
        data=json.dumps(fault).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=5).close()


def seen(request_id: str) -> list:
    """What reached the proxy for POST /run with this request_id, in order."""
    url = hub()["proxy_url"] + "/__proxy/seen?request_id=" + urllib.parse.quote(request_id)
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())
