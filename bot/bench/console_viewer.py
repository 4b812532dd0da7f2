"""One console viewer for ``glyphoxa bench console``: a process of its own, as a browser is.

``python -m bot.bench.console_viewer LOGIN_URL TABLE_ID`` logs in with the one-time link, reads
the table's server-sent events until its standard input closes, then prints one JSON line: the
updates and bytes it got and how long each took from the table's event to its arrival.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import httpx

__all__ = ["main"]


def main(argv: list[str]) -> int:
    login, table = argv
    base = login.split("/login/", 1)[0]
    events = received = 0
    latency_ms: list[float] = []
    with httpx.Client(base_url=base, timeout=httpx.Timeout(10.0, read=None)) as client:
        client.get(login.removeprefix(base))
        with client.stream("GET", f"/tables/{table}/events") as response:
            print(json.dumps({"ready": response.status_code}), flush=True)
            threading.Thread(target=_close_on_eof, args=(response,), daemon=True).start()
            try:
                for line in response.iter_lines():
                    received += len(line) + 1
                    if line.startswith("id: "):
                        events += 1
                        sent = int(line[4:].split(".")[1])
                        if sent:
                            latency_ms.append(time.time() * 1000 - sent)
            except (httpx.HTTPError, RuntimeError, ValueError):
                pass  # closed by the bench
    print(json.dumps({"events": events, "bytes": received, "latency_ms": latency_ms}), flush=True)
    return 0


def _close_on_eof(response: httpx.Response) -> None:
    sys.stdin.read()
    response.close()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
