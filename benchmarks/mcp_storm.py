"""A ``list_changed`` storm and an oversized listing against real MCP server processes.

Starts ``tests/live_mcp/hostile_server.py`` (the official SDK) over stdio, has it send
N ``notifications/tools/list_changed`` (each listing takes ``--delay`` seconds on the
server), and measures how many ``tools/list`` re-lists the hub makes and how long each
``apply_changes`` (what every compile runs first) blocks while the storm settles. Then a
50 MB ``tools/list`` over streamable HTTP: time and peak RSS until it is refused.

    python benchmarks/mcp_storm.py [--notifications 2000] [--delay 0.2 1.0] [--huge-mb 50]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

from contextchef import ContextChef, ToolCall
from contextchef.mcp import McpHub, McpServer
from contextchef.mcp._hub import QUIET

SERVER = Path(__file__).resolve().parents[1] / "tests" / "live_mcp" / "hostile_server.py"


def storm(notifications: int, delay: float) -> dict[str, float]:
    chef = ContextChef()
    spec = McpServer(
        command=sys.executable,
        args=(str(SERVER), "storm"),
        env={"LIST_DELAY": str(delay)},
        timeout=120,
    )
    with McpHub(chef, [spec]) as hub:
        start = time.monotonic()
        chef.execute(ToolCall(id="s", name="storm__storm", arguments={"n": notifications}))
        sent = time.monotonic() - start
        blocks: list[float] = []  # an agent compiling every 50 ms while the storm settles
        seen, changed, deadline = hub.relists, time.monotonic(), time.monotonic() + 120
        while time.monotonic() - changed < QUIET + delay + 1.0 and time.monotonic() < deadline:
            t = time.perf_counter()
            hub.apply_changes()
            blocks.append(time.perf_counter() - t)
            if hub.relists != seen:
                seen, changed = hub.relists, time.monotonic()
            time.sleep(0.05)
        settled = time.monotonic() - start
        answer = chef.execute(ToolCall(id="q", name="storm__stats", arguments={}))
        listed = json.loads(answer.result.content)["listed"]
    return {
        "notifications": notifications,
        "listing_s": delay,
        "sent_s": round(sent, 2),
        "relists": hub.relists,
        "served_listings": listed,
        "apply_calls": len(blocks),
        "max_block_s": round(max(blocks), 3),
        "settled_s": round(settled, 2),
    }


def huge(megabytes: float) -> dict[str, object]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "HUGE_MB": str(megabytes), "JSON_RESPONSE": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "huge", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        start = time.monotonic()
        try:
            McpHub(
                ContextChef(), [McpServer(url=f"http://127.0.0.1:{port}/mcp", timeout=300)]
            ).start()
            outcome = "accepted"
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {str(exc)[:90]}"
        seconds = time.monotonic() - start
    finally:
        proc.kill()
        proc.wait()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return {"mb": megabytes, "seconds": round(seconds, 2), "peak_rss_mb": rss, "outcome": outcome}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notifications", type=int, default=2000)
    parser.add_argument("--delay", type=float, nargs="+", default=[0.2, 1.0])
    parser.add_argument("--huge-mb", type=float, default=50.0)
    args = parser.parse_args()
    for delay in args.delay:
        print(json.dumps(storm(args.notifications, delay)))
    print(json.dumps(huge(args.huge_mb)))


if __name__ == "__main__":
    main()
